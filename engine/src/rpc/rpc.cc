#include "rpc/rpc.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

namespace rdx::rpc {

using transport::Completion;
using transport::CompletionKind;

namespace {
constexpr auto kExpiryCheckEvery = std::chrono::milliseconds(5);
constexpr size_t kPollBatch = 64;
}  // namespace

Rpc::Rpc(transport::Endpoint& ep, Scheduler& sched, RpcConfig cfg) : ep_(ep), sched_(sched), cfg_(cfg) {
  cfg_.max_batch_bytes = std::min(cfg_.max_batch_bytes, ep_.max_packet());
  cfg_.max_batch_bytes = std::max(cfg_.max_batch_bytes, sizeof(PacketHeader) + sizeof(MsgHeader) + 8);
  cfg_.max_batch_messages = std::clamp<size_t>(cfg_.max_batch_messages, 1, 65535);
}

Rpc::~Rpc() = default;

Status Rpc::on(MsgType type, Handler h) {
  if (type == 0) return error(Code::kInvalidArgument, "message type 0 is reserved");
  if (handlers_.size() <= type) handlers_.resize(type + 1);
  if (handlers_[type]) return error(Code::kAlreadyExists, "message type {} already has a handler", type);
  handlers_[type] = std::move(h);
  return Status::ok();
}

size_t Rpc::pending_calls() const {
  size_t n = calls_.size();
  for (const auto& cs : conns_)
    for (const auto& [type, as] : cs.ack_send) n += as.pending.size();
  return n;
}

size_t Rpc::max_message_payload() const { return ep_.max_packet() - sizeof(PacketHeader) - sizeof(MsgHeader); }

Rpc::ConnState& Rpc::conn_state(ConnId c) {
  if (conns_.size() <= c) conns_.resize(c + 1);
  return conns_[c];
}

void Rpc::close_batch(ConnState& cs) {
  if (cs.open_count == 0) return;
  PacketHeader ph{kPacketMagic, cfg_.epoch, cs.open_count, 0, static_cast<uint32_t>(cs.open.size())};
  std::memcpy(cs.open.data(), &ph, sizeof(ph));
  cs.closed.push_back(std::move(cs.open));
  cs.open = {};
  cs.open_count = 0;
}

Status Rpc::append(ConnId c, const MsgHeader& h, std::span<const std::byte> payload) {
  size_t msg = sizeof(MsgHeader) + payload.size();
  if (sizeof(PacketHeader) + msg > ep_.max_packet())
    return error(Code::kInvalidArgument, "message of {} bytes exceeds the packet limit {}", payload.size(),
                 max_message_payload());
  if (!ep_.connected(c)) return error(Code::kUnavailable, "connection {} is not up", c);
  ConnState& cs = conn_state(c);
  // A message that does not fit the open batch closes it; a message larger than the batch cap travels alone.
  if (cs.open_count > 0 && (cs.open.size() + msg > cfg_.max_batch_bytes || cs.open_count >= cfg_.max_batch_messages))
    close_batch(cs);
  if (cs.open_count == 0) {
    cs.open.reserve(std::max(cfg_.max_batch_bytes, sizeof(PacketHeader) + msg));
    cs.open.resize(sizeof(PacketHeader));
  }
  size_t at = cs.open.size();
  cs.open.resize(at + msg);
  std::memcpy(cs.open.data() + at, &h, sizeof(h));
  if (!payload.empty()) std::memcpy(cs.open.data() + at + sizeof(h), payload.data(), payload.size());
  ++cs.open_count;
  ++stats_.messages_sent;
  if (!cfg_.batching) close_batch(cs);
  return Status::ok();
}

Status Rpc::send_oneway(ConnId conn, MsgType type, std::span<const std::byte> payload) {
  MsgHeader h{type, static_cast<uint8_t>(MsgKind::kOneway), 0, static_cast<uint32_t>(payload.size()), 0};
  return append(conn, h, payload);
}

void Rpc::respond(const ReplyTo& to, Code status, std::span<const std::byte> payload) {
  if (to.kind != MsgKind::kRequest) return;
  MsgHeader h{to.type, static_cast<uint8_t>(MsgKind::kResponse), static_cast<uint8_t>(status),
              static_cast<uint32_t>(payload.size()), to.id};
  Status st = append(to.conn, h, payload);
  if (!st.is_ok()) {
    // The requester is gone (its calls fail there) or the response is too large: answer with the error instead.
    if (st.code() == Code::kInvalidArgument) {
      MsgHeader eh{to.type, static_cast<uint8_t>(MsgKind::kResponse), static_cast<uint8_t>(Code::kResourceExhausted), 0,
                   to.id};
      (void)append(to.conn, eh, {});
    }
  }
}

void Rpc::ack(const ReplyTo& to) {
  if (to.kind != MsgKind::kAckable || to.conn >= conns_.size()) return;
  ConnState& cs = conns_[to.conn];
  auto it = cs.ack_recv.find(to.type);
  if (it == cs.ack_recv.end()) return;
  AckRecv& ar = it->second;
  if (to.id < ar.next) return;  // duplicate
  if (to.id != ar.next) {
    ar.done_ahead.insert(to.id);
    return;
  }
  ++ar.next;
  while (!ar.done_ahead.empty() && *ar.done_ahead.begin() == ar.next) {
    ar.done_ahead.erase(ar.done_ahead.begin());
    ++ar.next;
  }
  cs.acks_dirty = true;
}

void Rpc::refuse(const ReplyTo& to, Code status) {
  if (to.kind != MsgKind::kAckable || to.conn >= conns_.size() || status == Code::kOk) return;
  // The refusal goes out before the range that will cover this id (same connection, in order): the sender
  // fails the call first and then finds nothing left to complete for it.
  MsgHeader h{to.type, static_cast<uint8_t>(MsgKind::kAckRange), static_cast<uint8_t>(status), sizeof(to.id), to.id};
  (void)append(to.conn, h, as_bytes_of(to.id));
  ack(to);
}

void Rpc::emit_acks(ConnId c, ConnState& cs) {
  if (!cs.acks_dirty) return;
  cs.acks_dirty = false;
  for (auto& [type, ar] : cs.ack_recv) {
    if (ar.next - 1 <= ar.emitted_upto) continue;
    uint64_t first = ar.emitted_upto + 1, last = ar.next - 1;
    MsgHeader h{type, static_cast<uint8_t>(MsgKind::kAckRange), 0, sizeof(first), last};
    if (!append(c, h, as_bytes_of(first)).is_ok()) continue;
    ++stats_.ack_ranges_sent;
    stats_.acks_covered += last - first + 1;
    ar.emitted_upto = last;
  }
}

void Rpc::flush() {
  for (ConnId c = 0; c < conns_.size(); ++c) {
    ConnState& cs = conns_[c];
    emit_acks(c, cs);
    close_batch(cs);
    while (!cs.closed.empty()) {
      auto buf = ep_.packet_buffer(c);
      if (buf.empty()) {
        if (!ep_.connected(c)) cs.closed.clear();  // the connection died; its calls fail via kConnDown
        break;                                     // else: out of send credit, retry at the next flush
      }
      const auto& pkt = cs.closed.front();
      std::memcpy(buf.data(), pkt.data(), pkt.size());
      if (ep_.post_send(c, pkt.size()).is_ok()) ++stats_.packets_sent;
      cs.closed.pop_front();
      if (!cfg_.batching) ep_.flush();  // unbatched: every packet leaves on its own (own send()/doorbell)
    }
  }
  ep_.flush();
}

bool CallAwaiter::await_suspend(std::coroutine_handle<> h) {
  handle_ = h;
  return rpc_->start_call(this);
}

bool Rpc::start_call(CallAwaiter* a) {
  a->deadline_ = std::chrono::steady_clock::now() + (a->timeout_.count() > 0 ? a->timeout_ : cfg_.call_timeout);
  MsgHeader h{a->type_, static_cast<uint8_t>(a->kind_), 0, static_cast<uint32_t>(a->payload_.size()), 0};
  if (a->kind_ == MsgKind::kAckable) {
    if (!ep_.connected(a->conn_)) {
      a->resp_.status = Code::kUnavailable;
      a->resp_.payload = "the connection is not up; the request was not sent";
      return false;
    }
    AckSend& as = conn_state(a->conn_).ack_send[a->type_];
    h.id = as.next_seq;
    Status st = append(a->conn_, h, a->payload_);
    if (!st.is_ok()) {
      a->resp_.status = st.code();
      a->resp_.payload = st.message();
      ++stats_.calls_failed;
      return false;  // resume at once with the error
    }
    ++as.next_seq;
    as.pending.emplace_back(h.id, a);
    return true;
  }
  h.id = next_call_id_++;
  Status st = append(a->conn_, h, a->payload_);
  if (!st.is_ok()) {
    a->resp_.status = st.code();
    a->resp_.payload = st.message();
    ++stats_.calls_failed;
    return false;
  }
  calls_.emplace(h.id, a);
  return true;
}

void Rpc::finish_call(CallAwaiter* a, Code status, std::span<const std::byte> payload) {
  a->resp_.status = status;
  a->resp_.payload.assign(reinterpret_cast<const char*>(payload.data()), payload.size());
  if (status == Code::kUnavailable || status == Code::kTimeout) ++stats_.calls_failed;
  sched_.ready(a->handle_);
}

bool OneSidedAwaiter::await_suspend(std::coroutine_handle<> h) {
  handle_ = h;
  return rpc_->start_onesided(this);
}

bool Rpc::start_onesided(OneSidedAwaiter* a) {
  auto cookie = reinterpret_cast<uint64_t>(a);
  Status st;
  switch (a->op_) {
    case OneSidedAwaiter::Op::kRead:
      st = ep_.read(a->conn_, a->remote_, a->local_, a->len_, cookie);
      break;
    case OneSidedAwaiter::Op::kWrite:
      st = ep_.write(a->conn_, a->remote_, a->local_, a->len_, cookie, true);
      break;
    case OneSidedAwaiter::Op::kCas:
      st = ep_.cas(a->conn_, a->remote_, a->arg0_, a->arg1_, static_cast<uint64_t*>(a->local_), cookie);
      break;
    case OneSidedAwaiter::Op::kFaa:
      st = ep_.faa(a->conn_, a->remote_, a->arg0_, static_cast<uint64_t*>(a->local_), cookie);
      break;
  }
  if (!st.is_ok()) {
    a->result_.status = st.code();
    return false;
  }
  return true;
}

OneSidedAwaiter Rpc::read(ConnId c, transport::RemotePtr src, void* dst, uint32_t len) {
  OneSidedAwaiter a;
  a.rpc_ = this, a.op_ = OneSidedAwaiter::Op::kRead, a.conn_ = c, a.remote_ = src, a.local_ = dst, a.len_ = len;
  return a;
}
OneSidedAwaiter Rpc::write(ConnId c, transport::RemotePtr dst, const void* src, uint32_t len) {
  OneSidedAwaiter a;
  a.rpc_ = this, a.op_ = OneSidedAwaiter::Op::kWrite, a.conn_ = c, a.remote_ = dst;
  a.local_ = const_cast<void*>(src), a.len_ = len;
  return a;
}
OneSidedAwaiter Rpc::cas(ConnId c, transport::RemotePtr dst, uint64_t expected, uint64_t desired, uint64_t* result) {
  OneSidedAwaiter a;
  a.rpc_ = this, a.op_ = OneSidedAwaiter::Op::kCas, a.conn_ = c, a.remote_ = dst, a.local_ = result;
  a.arg0_ = expected, a.arg1_ = desired;
  return a;
}
OneSidedAwaiter Rpc::faa(ConnId c, transport::RemotePtr dst, uint64_t add, uint64_t* result) {
  OneSidedAwaiter a;
  a.rpc_ = this, a.op_ = OneSidedAwaiter::Op::kFaa, a.conn_ = c, a.remote_ = dst, a.local_ = result;
  a.arg0_ = add;
  return a;
}

size_t Rpc::poll() {
  // Left uninitialized: the endpoint writes each completion it returns whole, and the worker polls in a loop, so
  // value-initializing 4 KB of completions every call was most of an idle poll's cost (under TSan, a quarter of the
  // conformance suites' CPU time).
  union Batch {
    Batch() {}
    Completion c[kPollBatch];
  } batch;
  const Completion* cps = batch.c;
  size_t n = ep_.poll(batch.c);
  for (size_t i = 0; i < n; ++i) {
    const Completion& cp = cps[i];
    switch (cp.kind) {
      case CompletionKind::kRecv:
        on_packet(cp);
        break;
      case CompletionKind::kRead:
      case CompletionKind::kWrite:
      case CompletionKind::kCas:
      case CompletionKind::kFaa:
        on_onesided(cp);
        break;
      case CompletionKind::kConnUp:
        conn_state(cp.conn).peer_node = cp.peer_node;
        if (conn_handler_) conn_handler_(cp);
        break;
      case CompletionKind::kConnDown:
        on_conn_down(cp.conn);
        if (conn_handler_) conn_handler_(cp);
        break;
      case CompletionKind::kRecvImm:
        if (conn_handler_) conn_handler_(cp);
        break;
    }
  }
  auto now = std::chrono::steady_clock::now();
  if (now >= next_expiry_check_) {
    next_expiry_check_ = now + kExpiryCheckEvery;
    expire_calls();
  }
  return n;
}

void Rpc::on_onesided(const Completion& cp) {
  if (cp.cookie == 0) return;  // unsignaled op that failed: nobody waits for it
  auto* a = reinterpret_cast<OneSidedAwaiter*>(cp.cookie);
  a->result_.status = cp.status;
  a->result_.value = cp.value;
  sched_.ready(a->handle_);
}

Task<Response> Rpc::call_task(ConnId conn, MsgType type, std::string payload, std::chrono::milliseconds timeout) {
  co_return co_await call(conn, type, as_bytes_of(payload), timeout);
}

void Rpc::on_packet(const Completion& cp) {
  auto data = cp.data;
  PacketHeader ph;
  if (data.size() < sizeof(ph)) {
    ++stats_.bad_packets;
    return;
  }
  std::memcpy(&ph, data.data(), sizeof(ph));
  if (ph.magic != kPacketMagic || ph.bytes != data.size() || ph.count == 0) {
    ++stats_.bad_packets;
    spdlog::warn("rpc: dropped malformed packet from node {} ({} bytes, magic {:#x}, count {})", cp.peer_node,
                 data.size(), ph.magic, ph.count);
    return;
  }
  if (ph.epoch != cfg_.epoch) {
    ++stats_.bad_packets;  // a message from another configuration epoch: ignore it
    return;
  }
  if (drop_from_ != nullptr && drop_from_->load(std::memory_order_relaxed) == static_cast<int32_t>(cp.peer_node))
    return;  // a planted partition (tests)
  // Validate the whole packet before dispatching any of it, so a malformed tail cannot half-apply a batch.
  size_t off = sizeof(ph);
  for (uint16_t i = 0; i < ph.count; ++i) {
    MsgHeader h;
    if (data.size() - off < sizeof(h)) {
      ++stats_.bad_packets;
      return;
    }
    std::memcpy(&h, data.data() + off, sizeof(h));
    if (h.len > data.size() - off - sizeof(h) || h.kind < 1 || h.kind > 5) {
      ++stats_.bad_packets;
      return;
    }
    off += sizeof(h) + h.len;
  }
  if (off != data.size()) {
    ++stats_.bad_packets;
    return;
  }
  ++stats_.packets_received;
  conn_state(cp.conn).peer_node = cp.peer_node;
  off = sizeof(ph);
  for (uint16_t i = 0; i < ph.count; ++i) {
    MsgHeader h;
    std::memcpy(&h, data.data() + off, sizeof(h));
    on_message(cp.conn, h, data.subspan(off + sizeof(h), h.len));
    off += sizeof(h) + h.len;
  }
}

void Rpc::on_message(ConnId conn, const MsgHeader& h, std::span<const std::byte> payload) {
  ++stats_.messages_received;
  auto kind = static_cast<MsgKind>(h.kind);
  switch (kind) {
    case MsgKind::kResponse: {
      auto it = calls_.find(h.id);
      if (it == calls_.end() || it->second->conn_ != conn) {
        ++stats_.late_responses;  // timed out already, or forged
        return;
      }
      CallAwaiter* a = it->second;
      calls_.erase(it);
      finish_call(a, static_cast<Code>(h.status), payload);
      return;
    }
    case MsgKind::kAckRange: {
      if (payload.size() != sizeof(uint64_t)) return;
      uint64_t first;
      std::memcpy(&first, payload.data(), sizeof(first));
      auto& sends = conns_[conn].ack_send;
      auto it = sends.find(h.type);
      if (it == sends.end() || first > h.id) return;
      auto& pend = it->second.pending;
      if (static_cast<Code>(h.status) != Code::kOk) {  // a refusal (Rpc::refuse) of exactly one message
        auto one = std::find_if(pend.begin(), pend.end(), [&](const auto& p) { return p.first == h.id; });
        if (first != h.id || one == pend.end()) return;
        CallAwaiter* a = one->second;
        pend.erase(one);
        finish_call(a, static_cast<Code>(h.status), {});
        return;
      }
      while (!pend.empty() && pend.front().first <= h.id) {
        finish_call(pend.front().second, Code::kOk, {});
        pend.pop_front();
      }
      return;
    }
    case MsgKind::kRequest:
    case MsgKind::kOneway:
    case MsgKind::kAckable: {
      if (kind == MsgKind::kAckable) {
        AckRecv& ar = conn_state(conn).ack_recv[h.type];
        if (h.id < ar.next || ar.done_ahead.count(h.id) != 0) return;  // duplicate id: ignore
      }
      if (h.type >= handlers_.size() || !handlers_[h.type]) {
        ++stats_.unknown_types;
        if (kind == MsgKind::kRequest) respond({conn, h.id, kind, h.type}, Code::kUnsupported);
        return;
      }
      Incoming in{conn, h.type, kind, h.id, conns_[conn].peer_node, payload};
      handlers_[h.type](in);
      return;
    }
  }
}

void Rpc::on_conn_down(ConnId conn) {
  abandon_calls(conn);
  if (conn < conns_.size()) conns_[conn] = ConnState{};
}

void Rpc::abandon_calls(ConnId conn) {
  // (The callers' error text: they may pass it on to a client.)
  static constexpr std::string_view kLost =
      "no answer: the connection went down, or its node was found lost; the request may or may not have been done";
  const auto lost = std::as_bytes(std::span(kLost));
  for (auto it = calls_.begin(); it != calls_.end();) {
    if (it->second->conn_ == conn) {
      finish_call(it->second, Code::kUnavailable, lost);
      it = calls_.erase(it);
    } else {
      ++it;
    }
  }
  if (conn < conns_.size())
    for (auto& [type, as] : conns_[conn].ack_send) {
      for (auto& [seq, a] : as.pending) finish_call(a, Code::kUnavailable, lost);
      as.pending.clear();
    }
}

void Rpc::expire_calls() {
  auto now = std::chrono::steady_clock::now();
  for (auto it = calls_.begin(); it != calls_.end();) {
    if (it->second->deadline_ <= now) {
      ++stats_.calls_timed_out;
      finish_call(it->second, Code::kTimeout, {});
      it = calls_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& cs : conns_)
    for (auto& [type, as] : cs.ack_send)
      while (!as.pending.empty() && as.pending.front().second->deadline_ <= now) {
        ++stats_.calls_timed_out;
        finish_call(as.pending.front().second, Code::kTimeout, {});
        as.pending.pop_front();
      }
}

}  // namespace rdx::rpc
