#include "transport/tcp/tcp_endpoint.h"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "common/atomic_copy.h"

namespace rdx::transport::tcp {

namespace {
constexpr uint64_t kHandoffTag = ~0ull;
constexpr size_t kMaxQueuedOut = 16u << 20;  // back-pressure: packet_buffer() refuses beyond this
constexpr size_t kReadChunk = 256u << 10;    // bytes read per connection per poll
constexpr size_t kInitialIn = 64u << 10;

template <typename T>
T load_pod(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
}  // namespace

TcpEndpoint::TcpEndpoint(TcpTransport& t, uint16_t worker, net::UniqueFd epfd, MemoryBlock scratch)
    : transport_(t), worker_(worker), epfd_(std::move(epfd)), scratch_(std::move(scratch)) {}

TcpEndpoint::~TcpEndpoint() = default;

Result<std::unique_ptr<Endpoint>> TcpEndpoint::create(TcpTransport& t, uint16_t worker) {
  net::UniqueFd ep(epoll_create1(EPOLL_CLOEXEC));
  if (!ep) return error(Code::kInternal, "epoll_create1: {}", strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kHandoffTag;
  if (epoll_ctl(ep.get(), EPOLL_CTL_ADD, t.handoff(worker).eventfd, &ev) < 0)
    return error(Code::kInternal, "epoll_ctl: {}", strerror(errno));
  auto scratch = MemoryBlock::allocate(t.config().scratch_bytes, t.config().hugepages);
  if (!scratch) return scratch.status();
  return std::unique_ptr<Endpoint>(new TcpEndpoint(t, worker, std::move(ep), std::move(scratch.value())));
}

TcpEndpoint::Conn* TcpEndpoint::live(ConnId c) {
  if (c >= conns_.size() || conns_[c]->state == State::kDown) return nullptr;
  return conns_[c].get();
}
const TcpEndpoint::Conn* TcpEndpoint::live(ConnId c) const {
  if (c >= conns_.size() || conns_[c]->state == State::kDown) return nullptr;
  return conns_[c].get();
}

ConnId TcpEndpoint::add_conn(net::UniqueFd fd, State st, NodeId node, uint16_t worker) {
  auto c = std::make_unique<Conn>();
  c->fd = std::move(fd);
  c->state = st;
  c->peer_node = node;
  c->peer_worker = worker;
  c->in.resize(kInitialIn);
  c->stage.resize(max_packet());
  ConnId id = static_cast<ConnId>(conns_.size());
  epoll_event ev{};
  ev.events = EPOLLIN | (st == State::kConnecting ? uint32_t{EPOLLOUT} : 0u);
  c->want_out = st == State::kConnecting;
  ev.data.u64 = id;
  epoll_ctl(epfd_.get(), EPOLL_CTL_ADD, c->fd.get(), &ev);
  conns_.push_back(std::move(c));
  return id;
}

Result<ConnId> TcpEndpoint::connect(const PeerAddr& peer, uint16_t remote_worker) {
  const std::string host = transport_.dial_host(peer);
  auto fd = net::connect_tcp_nonblocking(host, peer.port);
  if (!fd) {
    ++stats_.conn_failures;
    transport_.dial_failed(peer.node, host);
    return fd.status();
  }
  ConnId id = add_conn(std::move(fd.value()), State::kConnecting, peer.node, remote_worker);
  conns_[id]->dialed = host;
  Hello h{kMagic,
          kWireVersion,
          transport_.config().node,
          transport_.config().epoch,
          worker_,
          remote_worker,
          static_cast<uint32_t>(max_packet()),
          0};
  Conn& c = *conns_[id];
  c.out.insert(c.out.end(), reinterpret_cast<std::byte*>(&h), reinterpret_cast<std::byte*>(&h) + sizeof(h));
  c.up_deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(transport_.config().connect_timeout_ms);
  opening_.push_back(id);
  return id;
}

void TcpEndpoint::expire_opening() {
  auto now = std::chrono::steady_clock::now();
  std::erase_if(opening_, [&](ConnId id) {
    Conn* c = live(id);
    if (c == nullptr || c->state == State::kUp) return true;
    if (now < c->up_deadline) return false;
    fail(id, "not up before the connect timeout");
    return true;
  });
}

void TcpEndpoint::disconnect(ConnId conn) {
  if (live(conn) != nullptr) fail(conn, "closed locally");
}

bool TcpEndpoint::connected(ConnId conn) const {
  const Conn* c = live(conn);
  return c != nullptr && c->state == State::kUp;
}

std::span<std::byte> TcpEndpoint::packet_buffer(ConnId conn) {
  Conn* c = live(conn);
  if (c == nullptr || c->state != State::kUp || c->out.size() - c->out_sent > kMaxQueuedOut) return {};
  return c->stage;
}

Status TcpEndpoint::post_send(ConnId conn, size_t len) {
  Conn* c = live(conn);
  if (c == nullptr || c->state != State::kUp) return error(Code::kUnavailable, "connection {} is not up", conn);
  if (len == 0 || len > max_packet())
    return error(Code::kInvalidArgument, "packet of {} bytes (max {})", len, max_packet());
  append_frame(*c, FrameType::kPacket, 0, 0, c->stage.data(), len);
  ++stats_.packets_sent;
  stats_.bytes_sent += len;
  return Status::ok();
}

void TcpEndpoint::append_frame(Conn& c, FrameType type, uint8_t status, uint64_t op_id, const void* a, size_t alen,
                               const void* b, size_t blen, uint32_t imm, uint8_t flags) {
  FrameHeader h{static_cast<uint32_t>(alen + blen), static_cast<uint8_t>(type), status, flags, 0, op_id, imm, 0};
  size_t at = c.out.size();
  c.out.resize(at + sizeof(h) + alen + blen);
  std::memcpy(c.out.data() + at, &h, sizeof(h));
  if (alen > 0) std::memcpy(c.out.data() + at + sizeof(h), a, alen);
  // `b` is region memory another thread may write concurrently (READ responses): copy it word-atomically.
  if (blen > 0) atomic_load_bytes(c.out.data() + at + sizeof(h) + alen, b, blen);
}

Status TcpEndpoint::queue_op(ConnId conn, FrameType type, const RemoteOp& op, const void* data, uint32_t data_len,
                             uint32_t imm, uint8_t flags, PendingOp pending) {
  Conn* c = live(conn);
  if (c == nullptr || c->state != State::kUp) return error(Code::kUnavailable, "connection {} is not up", conn);
  if (op.len > kMaxOneSidedBytes) return error(Code::kInvalidArgument, "one-sided op of {} bytes", op.len);
  pending.op_id = next_op_id_++;
  c->pending.push_back(pending);
  append_frame(*c, type, 0, pending.op_id, &op, sizeof(op), nullptr, 0, imm, flags);
  if (data_len > 0) {
    // Fix the header length to cover the data, then append the caller's bytes (plain copy: the caller owns them).
    size_t hdr_at = c->out.size() - sizeof(op) - sizeof(FrameHeader);
    FrameHeader h = load_pod<FrameHeader>(c->out.data() + hdr_at);
    h.len += data_len;
    std::memcpy(c->out.data() + hdr_at, &h, sizeof(h));
    const auto* d = static_cast<const std::byte*>(data);
    c->out.insert(c->out.end(), d, d + data_len);
  }
  ++stats_.onesided_issued;
  return Status::ok();
}

Status TcpEndpoint::read(ConnId conn, RemotePtr src, void* dst, uint32_t len, uint64_t cookie) {
  RemoteOp op{src.region, 0, len, src.offset, 0, 0};
  return queue_op(conn, FrameType::kReadReq, op, nullptr, 0, 0, 0,
                  PendingOp{CompletionKind::kRead, 0, cookie, dst, len, nullptr, true});
}

Status TcpEndpoint::write(ConnId conn, RemotePtr dst, const void* src, uint32_t len, uint64_t cookie, bool signaled) {
  RemoteOp op{dst.region, 0, len, dst.offset, 0, 0};
  return queue_op(conn, FrameType::kWriteReq, op, src, len, 0, signaled ? kWriteSignaled : 0,
                  PendingOp{CompletionKind::kWrite, 0, cookie, nullptr, len, nullptr, signaled});
}

Status TcpEndpoint::write_imm(ConnId conn, RemotePtr dst, const void* src, uint32_t len, uint32_t imm,
                              uint64_t cookie) {
  RemoteOp op{dst.region, 0, len, dst.offset, 0, 0};
  return queue_op(conn, FrameType::kWriteReq, op, src, len, imm, kWriteSignaled | kWriteWithImm,
                  PendingOp{CompletionKind::kWrite, 0, cookie, nullptr, len, nullptr, true});
}

Status TcpEndpoint::cas(ConnId conn, RemotePtr dst, uint64_t expected, uint64_t desired, uint64_t* result,
                        uint64_t cookie) {
  RemoteOp op{dst.region, 0, 8, dst.offset, expected, desired};
  return queue_op(conn, FrameType::kCasReq, op, nullptr, 0, 0, 0,
                  PendingOp{CompletionKind::kCas, 0, cookie, nullptr, 8, result, true});
}

Status TcpEndpoint::faa(ConnId conn, RemotePtr dst, uint64_t add, uint64_t* result, uint64_t cookie) {
  RemoteOp op{dst.region, 0, 8, dst.offset, add, 0};
  return queue_op(conn, FrameType::kFaaReq, op, nullptr, 0, 0, 0,
                  PendingOp{CompletionKind::kFaa, 0, cookie, nullptr, 8, result, true});
}

void TcpEndpoint::update_epoll(ConnId id) {
  Conn& c = *conns_[id];
  bool want = c.out.size() > c.out_sent || c.state == State::kConnecting;
  if (want == c.want_out) return;
  c.want_out = want;
  epoll_event ev{};
  ev.events = EPOLLIN | (want ? uint32_t{EPOLLOUT} : 0u);
  ev.data.u64 = id;
  epoll_ctl(epfd_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
}

void TcpEndpoint::write_out(ConnId id) {
  Conn& c = *conns_[id];
  if (c.state == State::kDown || c.state == State::kConnecting) return;
  while (c.out_sent < c.out.size()) {
    ssize_t r = ::send(c.fd.get(), c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
    if (r > 0) {
      c.out_sent += static_cast<size_t>(r);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    fail(id, "send failed");
    return;
  }
  if (c.out_sent == c.out.size()) {
    c.out.clear();
    c.out_sent = 0;
  }
  update_epoll(id);
}

void TcpEndpoint::flush() {
  bool any = false;
  for (ConnId id = 0; id < conns_.size(); ++id) {
    Conn& c = *conns_[id];
    if (c.state == State::kDown || c.out.size() == c.out_sent) continue;
    any = true;
    write_out(id);
  }
  if (any) ++stats_.doorbells;
}

void TcpEndpoint::fail(ConnId id, const char* why) {
  Conn& c = *conns_[id];
  if (c.state == State::kDown) return;
  spdlog::debug("tcp endpoint w{}: connection {} to node {} worker {} down: {}", worker_, id, c.peer_node,
                c.peer_worker, why);
  if (c.state != State::kUp && !c.dialed.empty()) transport_.dial_failed(c.peer_node, c.dialed);
  epoll_ctl(epfd_.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
  c.fd.reset();
  c.state = State::kDown;
  for (const PendingOp& p : c.pending) {
    Completion cp;
    cp.kind = p.kind;
    cp.status = Code::kUnavailable;
    cp.conn = id;
    cp.cookie = p.cookie;
    cp.peer_node = c.peer_node;
    cp.peer_worker = c.peer_worker;
    deferred_.push_back(cp);
  }
  c.pending.clear();
  c.out.clear();
  c.out_sent = 0;
  // Completions handed out by this poll() may still point into `in`: free it at the next poll, not now.
  retired_buffers_.push_back(std::move(c.in));
  c.in = {};
  c.in_begin = c.in_end = 0;
  ++stats_.conn_failures;
  Completion down;
  down.kind = CompletionKind::kConnDown;
  down.status = Code::kUnavailable;
  down.conn = id;
  down.peer_node = c.peer_node;
  down.peer_worker = c.peer_worker;
  deferred_.push_back(down);
}

void TcpEndpoint::adopt_accepted() {
  Handoff& h = transport_.handoff(worker_);
  uint64_t cnt;
  [[maybe_unused]] ssize_t r = ::read(h.eventfd, &cnt, sizeof(cnt));
  std::deque<Accepted> got;
  {
    std::lock_guard<std::mutex> lk(h.mu);
    got.swap(h.queue);
  }
  for (const Accepted& a : got) {
    ConnId id = add_conn(net::UniqueFd(a.fd), State::kUp, a.peer_node, a.peer_worker);
    Completion up;
    up.kind = CompletionKind::kConnUp;
    up.conn = id;
    up.peer_node = a.peer_node;
    up.peer_worker = a.peer_worker;
    deferred_.push_back(up);
  }
}

void TcpEndpoint::on_writable(ConnId id) {
  Conn& c = *conns_[id];
  if (c.state == State::kConnecting) {
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(c.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      fail(id, strerror(err));
      return;
    }
    c.state = State::kHandshake;  // our Hello is already queued in `out`
  }
  write_out(id);
}

void TcpEndpoint::read_socket(ConnId id) {
  Conn& c = *conns_[id];
  // Compact: spans handed out by the previous poll() are no longer valid, so the buffer may move.
  if (c.in_begin > 0) {
    std::memmove(c.in.data(), c.in.data() + c.in_begin, c.in_end - c.in_begin);
    c.in_end -= c.in_begin;
    c.in_begin = 0;
  }
  if (c.grow_to > c.in.size()) c.in.resize(c.grow_to);
  c.grow_to = 0;
  size_t budget = kReadChunk;
  while (budget > 0) {
    if (c.in_end == c.in.size()) break;  // parse first; the buffer grows only when a single frame needs it
    size_t want = std::min(budget, c.in.size() - c.in_end);
    ssize_t r = ::recv(c.fd.get(), c.in.data() + c.in_end, want, 0);
    if (r > 0) {
      c.in_end += static_cast<size_t>(r);
      budget -= static_cast<size_t>(r);
      continue;
    }
    if (r == 0) {
      // Peer closed. Frames already buffered are delivered by parse_frames before the connection goes down.
      c.peer_closed = true;
      epoll_ctl(epfd_.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
      if (c.in_end == c.in_begin) fail(id, "peer closed");
      return;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) fail(id, strerror(errno));
    break;
  }
}

size_t TcpEndpoint::poll(std::span<Completion> out) {
  retired_buffers_.clear();  // spans from the previous poll() are no longer valid
  size_t n = 0;
  while (n < out.size() && !deferred_.empty()) {
    out[n++] = deferred_.front();
    deferred_.pop_front();
  }
  if (!opening_.empty()) expire_opening();
  epoll_event evs[64];
  int ne = epoll_wait(epfd_.get(), evs, 64, 0);
  for (int i = 0; i < ne; ++i) {
    if (evs[i].data.u64 == kHandoffTag) {
      adopt_accepted();
      continue;
    }
    ConnId id = static_cast<ConnId>(evs[i].data.u64);
    if (live(id) == nullptr) continue;
    if (evs[i].events & EPOLLOUT) on_writable(id);
    if (live(id) == nullptr) continue;
    if ((evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !conns_[id]->peer_closed) {
      if (conns_[id]->state == State::kConnecting) {
        on_writable(id);  // a refused connect reports as EPOLLERR/HUP
        if (live(id) == nullptr) continue;
      }
      read_socket(id);
    }
  }
  // Parse every connection with buffered bytes (newly read or left over when `out` filled up last time).
  for (ConnId id = 0; id < conns_.size() && n < out.size(); ++id) {
    Conn* c = live(id);
    if (c == nullptr || c->in_end == c->in_begin) continue;
    parse_frames(id, out, n);
  }
  while (n < out.size() && !deferred_.empty()) {
    out[n++] = deferred_.front();
    deferred_.pop_front();
  }
  // Responses to peers' one-sided ops go out now: the peer is waiting on them.
  flush();
  return n;
}

bool TcpEndpoint::parse_frames(ConnId id, std::span<Completion> out, size_t& n) {
  Conn& c = *conns_[id];
  if (c.state == State::kHandshake) {
    if (c.in_end - c.in_begin < sizeof(Hello)) return true;
    Hello h = load_pod<Hello>(c.in.data() + c.in_begin);
    c.in_begin += sizeof(Hello);
    if (h.magic != kMagic || h.status != 0) {
      spdlog::warn("tcp endpoint w{}: node {} refused connection: {}", worker_, c.peer_node,
                   h.magic != kMagic ? "bad magic" : code_name(static_cast<Code>(h.status)));
      fail(id, "handshake refused");
      return false;
    }
    if (h.src_node != c.peer_node) {  // an address now another node's (a reused pod IP, a stale learned address)
      spdlog::warn("tcp endpoint w{}: dialled node {} at {} but node {} answered; closing", worker_, c.peer_node,
                   c.dialed, h.src_node);
      fail(id, "another node answered");
      return false;
    }
    c.state = State::kUp;
    Completion up;
    up.kind = CompletionKind::kConnUp;
    up.conn = id;
    up.peer_node = c.peer_node;
    up.peer_worker = c.peer_worker;
    deferred_.push_back(up);
  }
  while (n < out.size() && c.state == State::kUp) {
    size_t avail = c.in_end - c.in_begin;
    if (avail < sizeof(FrameHeader)) break;
    FrameHeader h = load_pod<FrameHeader>(c.in.data() + c.in_begin);
    size_t limit =
        h.type == static_cast<uint8_t>(FrameType::kPacket) ? max_packet() : kMaxOneSidedBytes + sizeof(RemoteOp);
    if (h.len > limit) {
      ++stats_.rejected_messages;
      spdlog::warn("tcp endpoint w{}: frame of {} bytes (type {}) from node {} exceeds {}; closing", worker_, h.len,
                   h.type, c.peer_node, limit);
      fail(id, "oversized frame");
      return false;
    }
    size_t need = sizeof(FrameHeader) + h.len;
    if (avail < need) {
      // Grow (only to fit one validated frame) at the next read, not now: spans already handed out point into `in`.
      c.grow_to = std::max(c.grow_to, need);
      break;
    }
    std::span<const std::byte> body(c.in.data() + c.in_begin + sizeof(FrameHeader), h.len);
    c.in_begin += need;
    if (!handle_frame(id, h, body, out, n)) return false;
  }
  if (c.in_begin == c.in_end) c.in_begin = c.in_end = 0;
  if (c.peer_closed && c.state != State::kDown && (c.in_begin == c.in_end || n < out.size())) {
    // The peer closed after sending these frames; once they are delivered (or only a truncated frame is left),
    // the connection goes down.
    fail(id, c.in_begin == c.in_end ? "peer closed" : "peer closed mid-frame");
  }
  return true;
}

bool TcpEndpoint::handle_frame(ConnId id, const FrameHeader& h, std::span<const std::byte> body,
                               std::span<Completion> out, size_t& n) {
  Conn& c = *conns_[id];
  switch (static_cast<FrameType>(h.type)) {
    case FrameType::kPacket: {
      ++stats_.packets_received;
      stats_.bytes_received += body.size();
      Completion& cp = out[n++];
      cp = Completion{};
      cp.kind = CompletionKind::kRecv;
      cp.conn = id;
      cp.peer_node = c.peer_node;
      cp.peer_worker = c.peer_worker;
      cp.data = body;
      return true;
    }
    case FrameType::kReadReq:
    case FrameType::kWriteReq:
    case FrameType::kCasReq:
    case FrameType::kFaaReq:
      if (body.size() < sizeof(RemoteOp)) break;
      serve_remote_op(id, h, body, out, n);
      return true;
    case FrameType::kReadResp:
    case FrameType::kWriteAck:
    case FrameType::kAtomicResp:
      return complete_local_op(id, h, body, out, n);
  }
  ++stats_.rejected_messages;
  spdlog::warn("tcp endpoint w{}: malformed frame type {} len {} from node {}; closing", worker_, h.type, h.len,
               c.peer_node);
  fail(id, "malformed frame");
  return false;
}

void TcpEndpoint::serve_remote_op(ConnId id, const FrameHeader& h, std::span<const std::byte> body,
                                  std::span<Completion> out, size_t& n) {
  Conn& c = *conns_[id];
  RemoteOp op = load_pod<RemoteOp>(body.data());
  auto type = static_cast<FrameType>(h.type);
  const auto& regions = transport_.regions();
  uint32_t len = type == FrameType::kWriteReq ? static_cast<uint32_t>(body.size() - sizeof(RemoteOp)) : op.len;
  bool atomic = type == FrameType::kCasReq || type == FrameType::kFaaReq;
  Code st = Code::kOk;
  std::byte* target = nullptr;
  if (op.region >= regions.size() || regions[op.region].base == nullptr) {
    st = Code::kInvalidArgument;
  } else if (op.offset > regions[op.region].len || len > regions[op.region].len - op.offset) {
    st = Code::kInvalidArgument;
  } else if (atomic && (op.offset % 8 != 0 || len != 8)) {
    st = Code::kInvalidArgument;
  } else {
    target = regions[op.region].base + op.offset;
  }
  if (st != Code::kOk) ++stats_.rejected_messages;
  ++stats_.onesided_served;
  const uint8_t status = static_cast<uint8_t>(st);
  switch (type) {
    case FrameType::kReadReq:
      append_frame(c, FrameType::kReadResp, status, h.op_id, nullptr, 0, target, target ? len : 0);
      break;
    case FrameType::kWriteReq:
      if (target != nullptr) {
        atomic_store_bytes(target, body.data() + sizeof(RemoteOp), len);
        if ((h.flags & kWriteWithImm) != 0) {
          Completion cp;
          cp.kind = CompletionKind::kRecvImm;
          cp.peer_node = c.peer_node;
          cp.peer_worker = c.peer_worker;
          cp.conn = id;
          cp.imm = h.imm;
          cp.data = std::span<const std::byte>(target, len);
          if (n < out.size())
            out[n++] = cp;
          else
            deferred_.push_back(cp);
        }
      }
      append_frame(c, FrameType::kWriteAck, status, h.op_id, nullptr, 0);
      break;
    case FrameType::kCasReq:
    case FrameType::kFaaReq: {
      uint64_t old = 0;
      if (target != nullptr) {
        std::atomic_ref<uint64_t> word(*reinterpret_cast<uint64_t*>(target));
        if (type == FrameType::kCasReq) {
          old = op.arg0;
          word.compare_exchange_strong(old, op.arg1, std::memory_order_acq_rel);
        } else {
          old = word.fetch_add(op.arg0, std::memory_order_acq_rel);
        }
      }
      append_frame(c, FrameType::kAtomicResp, status, h.op_id, &old, sizeof(old));
      break;
    }
    default:
      break;
  }
}

bool TcpEndpoint::complete_local_op(ConnId id, const FrameHeader& h, std::span<const std::byte> body,
                                    std::span<Completion> out, size_t& n) {
  Conn& c = *conns_[id];
  if (c.pending.empty() || c.pending.front().op_id != h.op_id) {
    ++stats_.rejected_messages;
    fail(id, "response to an unknown operation");
    return false;
  }
  PendingOp p = c.pending.front();
  c.pending.pop_front();
  auto st = static_cast<Code>(h.status);
  Completion cp;
  cp.kind = p.kind;
  cp.status = st;
  cp.conn = id;
  cp.cookie = p.cookie;
  cp.peer_node = c.peer_node;
  cp.peer_worker = c.peer_worker;
  switch (static_cast<FrameType>(h.type)) {
    case FrameType::kReadResp:
      if (st == Code::kOk) {
        if (body.size() != p.len) {
          ++stats_.rejected_messages;
          fail(id, "READ response of the wrong length");
          return false;
        }
        std::memcpy(p.dst, body.data(), body.size());
      }
      break;
    case FrameType::kAtomicResp:
      if (body.size() != 8) {
        ++stats_.rejected_messages;
        fail(id, "atomic response of the wrong length");
        return false;
      }
      cp.value = load_pod<uint64_t>(body.data());
      if (st == Code::kOk && p.result != nullptr) *p.result = cp.value;
      break;
    case FrameType::kWriteAck:
      if (!p.signaled && st == Code::kOk) return true;  // unsignaled writes complete silently
      break;
    default:
      break;
  }
  out[n++] = cp;
  return true;
}

}  // namespace rdx::transport::tcp
