// Data path of the verbs endpoint, part 2: completion processing (poll(), the CQ, the SRQ, retiring work requests).
#include <arpa/inet.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "transport/verbs/verbs_endpoint.h"

namespace rdx::transport::verbs {

namespace {

// What a failed work completion means to the caller.
Code wc_code(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_REM_INV_REQ_ERR:
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_LEN_ERR:
      return Code::kInvalidArgument;
    default:
      return Code::kUnavailable;
  }
}

}  // namespace

void VerbsEndpoint::emit(const Conn& c, ConnId id, CompletionKind kind, Code status, uint64_t cookie, uint64_t value) {
  Pending p;
  p.c.kind = kind;
  p.c.status = status;
  p.c.conn = id;
  p.c.cookie = cookie;
  p.c.value = value;
  p.c.peer_node = c.peer_node;
  p.c.peer_worker = c.peer_worker;
  pending_.push_back(p);
}

void VerbsEndpoint::release(Op& op) {
  if (op.buffer >= 0) free_send_.push_back(op.buffer);
  if (op.atomic_slot >= 0) free_atomic_.push_back(op.atomic_slot);
  op.buffer = op.atomic_slot = -1;
}

// The outcome of WR `seq` is known: report it if the caller asked (or it failed and the caller owns it).
void VerbsEndpoint::retire(Conn& c, ConnId id, uint64_t seq, Code status, bool report) {
  Op& op = c.slots[seq % kSqDepth];
  if (report && op.cls == OpClass::kUser && (op.user_signaled || status != Code::kOk)) {
    uint64_t value = 0;
    if (status == Code::kOk && op.result != nullptr) value = __atomic_load_n(op.result, __ATOMIC_ACQUIRE);
    emit(c, id, op.kind, status, op.cookie, value);
  }
  release(op);
}

void VerbsEndpoint::on_send_wc(const ibv_wc& wc) {
  const ConnId id = wr_conn(wc.wr_id);
  Conn* c = live(id);
  if (c == nullptr || c->qp == nullptr) return;  // flushed WR of a connection already reported down
  const uint64_t seq = c->done + static_cast<uint32_t>(wr_seq(wc.wr_id) - static_cast<uint32_t>(c->done));
  if (seq >= c->posted) {
    spdlog::error("verbs: endpoint w{} conn {}: completion for unposted WR {} (posted {})", worker_, id, seq,
                  c->posted);
    return;
  }
  for (uint64_t s = c->done; s < seq; ++s) retire(*c, id, s, Code::kOk, false);  // earlier unsignaled WRs succeeded
  if (wc.status == IBV_WC_SUCCESS) {
    retire(*c, id, seq, Code::kOk, true);
    c->done = seq + 1;
    return;
  }
  retire(*c, id, seq, wc_code(wc.status), true);
  c->done = seq + 1;
  fail(id, Code::kUnavailable,
       fmt::format("work request failed: {} (vendor error {:#x})", ibv_wc_status_str(wc.status), wc.vendor_err));
}

void VerbsEndpoint::on_recv_wc(const ibv_wc& wc) {
  const uint32_t buf = static_cast<uint32_t>(wc.wr_id & ~kRecvTag);
  if (buf >= kSrqDepth) {
    spdlog::error("verbs: endpoint w{}: receive completion with bad buffer index {}", worker_, buf);
    return;
  }
  auto it = by_qpn_.find(wc.qp_num);
  Conn* c = it != by_qpn_.end() ? live(it->second) : nullptr;
  if (c == nullptr || wc.status != IBV_WC_SUCCESS) {
    repost_.push_back(buf);
    if (c != nullptr && wc.status != IBV_WC_WR_FLUSH_ERR)
      fail(it->second, Code::kUnavailable, fmt::format("receive failed: {}", ibv_wc_status_str(wc.status)));
    return;
  }
  const ConnId id = it->second;
  auto reject = [&](const std::string& why) {
    repost_.push_back(buf);
    ++stats_.rejected_messages;
    spdlog::warn("verbs: endpoint w{} conn {} (node {}): {}; closing", worker_, id, c->peer_node, why);
    fail(id, Code::kInvalidArgument, why);
  };
  if (wc.opcode == IBV_WC_RECV && (wc.wc_flags & IBV_WC_WITH_IMM) != 0) {
    if (ntohl(wc.imm_data) != kImmRegionTable || c->table_received)
      return reject(fmt::format("unexpected control message {:#x}", ntohl(wc.imm_data)));
    auto last = decode_region_chunk({recv_buf(buf), wc.byte_len}, c->peer_regions);
    if (!last) return reject(last.status().message());
    repost_.push_back(buf);
    if (last.value()) {
      c->table_received = true;
      maybe_up(id);
    }
    return;
  }
  if (c->state != State::kUp) return reject("data before the region table");
  if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
    repost_.push_back(buf);
    Pending p;
    p.c.kind = CompletionKind::kRecvImm;
    p.c.conn = id;
    p.c.imm = ntohl(wc.imm_data);
    p.c.peer_node = c->peer_node;
    p.c.peer_worker = c->peer_worker;
    pending_.push_back(p);
    return;
  }
  if (wc.opcode != IBV_WC_RECV) return reject(fmt::format("unexpected receive opcode {}", int(wc.opcode)));
  if (wc.byte_len == 0 || wc.byte_len > max_packet_) return reject(fmt::format("packet of {} bytes", wc.byte_len));
  ++stats_.packets_received;
  stats_.bytes_received += wc.byte_len;
  Pending p;
  p.c.kind = CompletionKind::kRecv;
  p.c.conn = id;
  p.c.peer_node = c->peer_node;
  p.c.peer_worker = c->peer_worker;
  p.c.data = {recv_buf(buf), wc.byte_len};
  p.recv_buffer = static_cast<int32_t>(buf);
  pending_.push_back(p);
}

void VerbsEndpoint::poll_cq(size_t want) {
  ibv_wc wcs[32];
  while (pending_.size() < want) {
    int n = ibv_poll_cq(cq_, static_cast<int>(std::min<size_t>(32, want - pending_.size())), wcs);
    if (n < 0) spdlog::error("verbs: endpoint w{}: ibv_poll_cq failed", worker_);
    if (n <= 0) return;
    for (int i = 0; i < n; ++i) {
      if ((wcs[i].wr_id & kRecvTag) != 0)
        on_recv_wc(wcs[i]);
      else
        on_send_wc(wcs[i]);
    }
  }
}

void VerbsEndpoint::repost_recvs() {
  if (repost_.empty()) return;
  const size_t n = repost_.size();
  for (size_t i = 0; i < n; ++i) {
    recv_sges_[i] =
        ibv_sge{reinterpret_cast<uint64_t>(recv_buf(repost_[i])), static_cast<uint32_t>(max_packet_), mr_->lkey};
    recv_wrs_[i] = ibv_recv_wr{};
    recv_wrs_[i].wr_id = kRecvTag | repost_[i];
    recv_wrs_[i].sg_list = &recv_sges_[i];
    recv_wrs_[i].num_sge = 1;
    recv_wrs_[i].next = i + 1 < n ? &recv_wrs_[i + 1] : nullptr;
  }
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_srq_recv(srq_, recv_wrs_.data(), &bad); rc != 0)
    spdlog::error("verbs: endpoint w{}: ibv_post_srq_recv: {}", worker_, strerror(rc));
  repost_.clear();
}

bool VerbsEndpoint::cm_check_due() {
  if (++polls_ % kCmCheckInterval != 0) return false;
  auto now = std::chrono::steady_clock::now();
  if (now - last_cm_check_ < kCmCheckPeriod) return false;
  last_cm_check_ = now;
  return true;
}

void VerbsEndpoint::arm() {
  if (ibv_req_notify_cq(cq_, 0) == 0) armed_ = true;
}

size_t VerbsEndpoint::poll(std::span<Completion> out) {
  const bool blocking = armed_;
  // Buffers lent to the caller by the previous poll() are free again.
  repost_.insert(repost_.end(), lent_recvs_.begin(), lent_recvs_.end());
  lent_recvs_.clear();
  if (armed_) {
    ibv_cq* ev_cq = nullptr;
    void* ev_ctx = nullptr;
    while (ibv_get_cq_event(comp_channel_, &ev_cq, &ev_ctx) == 0) {
      ++unacked_cq_events_;
      armed_ = false;
    }
    if (unacked_cq_events_ > 0 && (!armed_ || unacked_cq_events_ >= 64)) {
      ibv_ack_cq_events(cq_, unacked_cq_events_);
      unacked_cq_events_ = 0;
    }
  }
  if (slot_.pending.load(std::memory_order_acquire)) adopt_incoming();
  // The rdma_cm channel costs a syscall per look: busy pollers look about once a millisecond (clock read every
  // kCmCheckInterval polls), connection setup and blocking callers every time.
  if (blocking || connecting_ > 0 || cm_check_due()) process_cm_events();
  poll_cq(out.size());
  // Send queues freed by these completions take the rest of their flushed backlog.
  for (ConnId id : dirty_) {
    Conn& c = *conns_[id];
    if (c.state != State::kDown && c.released > 0 && c.qp != nullptr) post_backlog(id);
  }
  prune_dirty();
  if (!table_unsent_.empty()) {
    std::vector<ConnId> retry;
    retry.swap(table_unsent_);
    for (ConnId id : retry) send_region_table(id);
  }
  destroy_buried();
  repost_recvs();
  size_t n = 0;
  while (n < out.size() && !pending_.empty()) {
    const Pending& p = pending_.front();
    out[n++] = p.c;
    if (p.recv_buffer >= 0) lent_recvs_.push_back(static_cast<uint32_t>(p.recv_buffer));
    pending_.pop_front();
  }
  return n;
}

}  // namespace rdx::transport::verbs
