// Data path of the verbs endpoint, part 1: resources, validation and posting (doorbell batching, inlining, selective
// signaling). Completions: verbs_poll.cc; connection management: verbs_conn.cc.
#include "transport/verbs/verbs_endpoint.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rdx::transport::verbs {

namespace {

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

bool is_atomic(ibv_wr_opcode op) { return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD; }
bool may_inline(ibv_wr_opcode op) {
  return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

}  // namespace

VerbsEndpoint::VerbsEndpoint(VerbsTransport& t, uint16_t worker)
    : transport_(t),
      dev_(t.device()),
      worker_(worker),
      max_packet_(t.config().max_packet),
      scratch_bytes_(align_up(t.config().scratch_bytes, 64)),
      slot_(t.slot(worker)) {}

Result<std::unique_ptr<Endpoint>> VerbsEndpoint::create(VerbsTransport& t, uint16_t worker) {
  {
    WorkerSlot& s = t.slot(worker);
    std::lock_guard<std::mutex> lk(s.mu);
    if (s.in_use) return error(Code::kAlreadyExists, "worker {} already has an endpoint", worker);
    s.in_use = true;
  }
  std::unique_ptr<VerbsEndpoint> ep(new VerbsEndpoint(t, worker));
  Status st = ep->init();
  if (!st.is_ok()) return st;  // the destructor releases what init() created
  return std::unique_ptr<Endpoint>(std::move(ep));
}

Status VerbsEndpoint::init() {
  // One block: [scratch | receive buffers | send buffers | atomic result slots].
  recv_off_ = scratch_bytes_;
  send_off_ = recv_off_ + size_t{kSrqDepth} * max_packet_;
  atomic_off_ = send_off_ + size_t{kSendBuffers} * max_packet_;
  auto block = MemoryBlock::allocate(atomic_off_ + size_t{kAtomicSlots} * 8, transport_.config().hugepages);
  if (!block) return block.status();
  block_ = std::move(block.value());
  auto mr = dev_.register_memory(block_.data(), block_.size());
  if (!mr) return mr.status();
  mr_ = mr.value();

  comp_channel_ = ibv_create_comp_channel(dev_.ctx);
  if (comp_channel_ == nullptr) return error(Code::kInternal, "ibv_create_comp_channel: {}", strerror(errno));
  int flags = fcntl(comp_channel_->fd, F_GETFL);
  fcntl(comp_channel_->fd, F_SETFL, flags | O_NONBLOCK);
  cq_capacity_ = std::min<int>(kSrqDepth + 4 * (kSqDepth + 1), dev_.attr.max_cqe);
  cq_ = ibv_create_cq(dev_.ctx, cq_capacity_, this, comp_channel_, 0);
  if (cq_ == nullptr) return error(Code::kInternal, "ibv_create_cq({}): {}", cq_capacity_, strerror(errno));
  cq_capacity_ = cq_->cqe;

  if (dev_.attr.max_srq_wr < static_cast<int>(kSrqDepth))
    return error(Code::kUnsupported, "{} supports SRQs of {} WRs (need {})", dev_.name, dev_.attr.max_srq_wr,
                 kSrqDepth);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = kSrqDepth;
  sa.attr.max_sge = 1;
  srq_ = ibv_create_srq(dev_.pd, &sa);
  if (srq_ == nullptr) return error(Code::kInternal, "ibv_create_srq: {}", strerror(errno));
  wrs_.resize(kSqDepth);
  sges_.resize(kSqDepth);
  recv_wrs_.resize(kSrqDepth);
  recv_sges_.resize(kSrqDepth);
  for (uint32_t i = 0; i < kSrqDepth; ++i) repost_.push_back(i);
  repost_recvs();

  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) return error(Code::kInternal, "epoll_create1: {}", strerror(errno));
  for (int fd : {comp_channel_->fd, slot_.channel->fd, slot_.eventfd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) < 0) return error(Code::kInternal, "epoll_ctl: {}", strerror(errno));
  }
  for (int32_t i = kSendBuffers - 1; i >= 0; --i) free_send_.push_back(i);
  for (int32_t i = kAtomicSlots - 1; i >= 0; --i) free_atomic_.push_back(i);
  spdlog::debug("verbs: endpoint w{} on {}: {} KiB registered ({} pages)", worker_, dev_.name, block_.size() >> 10,
                block_.huge() ? "2 MB" : "4 KB");
  return Status::ok();
}

VerbsEndpoint::~VerbsEndpoint() {
  for (ConnId id = 0; id < conns_.size(); ++id) {
    Conn& c = *conns_[id];
    if (c.state != State::kDown && c.cm != nullptr && c.qp != nullptr) rdma_disconnect(c.cm);
    if (c.cm != nullptr || c.qp != nullptr) buried_.push_back(id);
  }
  destroy_buried();
  if (cq_ != nullptr && unacked_cq_events_ > 0) ibv_ack_cq_events(cq_, unacked_cq_events_);
  if (srq_ != nullptr) ibv_destroy_srq(srq_);
  if (cq_ != nullptr) ibv_destroy_cq(cq_);
  if (comp_channel_ != nullptr) ibv_destroy_comp_channel(comp_channel_);
  if (mr_ != nullptr) ibv_dereg_mr(mr_);
  if (epfd_ >= 0) ::close(epfd_);
  std::lock_guard<std::mutex> lk(slot_.mu);
  slot_.in_use = false;
}

// ---- validation ----

Status VerbsEndpoint::check_local(const void* p, size_t len, uint32_t* lkey) const {
  auto* b = static_cast<const std::byte*>(p);
  if (len == 0) {
    *lkey = mr_->lkey;
    return Status::ok();
  }
  if (b >= block_.data() && len <= scratch_bytes_ && b <= block_.data() + scratch_bytes_ - len) {
    *lkey = mr_->lkey;
    return Status::ok();
  }
  for (const Region& r : transport_.regions()) {
    if (r.mr != nullptr && b >= r.base && len <= r.len && b <= r.base + r.len - len) {
      *lkey = r.mr->lkey;
      return Status::ok();
    }
  }
  return error(Code::kInvalidArgument, "local buffer {} (+{} bytes) is neither in a registered region nor in scratch()",
               p, len);
}

bool VerbsEndpoint::check_remote(Conn& c, ConnId id, RemotePtr p, uint32_t len, bool atomic, uint64_t* addr,
                                 uint32_t* rkey, CompletionKind kind, uint64_t cookie) {
  const char* bad = nullptr;
  const RegionDesc* r = nullptr;
  if (p.node != c.peer_node) {
    bad = "points to another node";
  } else if (p.region >= c.peer_regions.size() || c.peer_regions[p.region].valid == 0) {
    bad = "names a region the peer did not register";
  } else {
    r = &c.peer_regions[p.region];
    if (p.offset > r->len || len > r->len - p.offset)
      bad = "is out of the region's bounds";
    else if (atomic && (r->addr + p.offset) % 8 != 0)
      bad = "is not 8-byte aligned for an atomic";
  }
  if (bad != nullptr) {
    ++stats_.rejected_messages;
    spdlog::debug("verbs: endpoint w{} conn {}: RemotePtr(node {}, region {}, offset {}, len {}) {}", worker_, id,
                  p.node, p.region, p.offset, len, bad);
    emit(c, id, kind, Code::kInvalidArgument, cookie);
    return false;
  }
  *addr = r->addr + p.offset;
  *rkey = r->rkey;
  return true;
}

// ---- posting ----

Status VerbsEndpoint::issue(ConnId id, Op op, RemotePtr target) {
  Conn* c = live(id);
  if (c == nullptr || c->state != State::kUp) {
    if (op.atomic_slot >= 0) free_atomic_.push_back(op.atomic_slot);
    return error(Code::kUnavailable, "connection {} is not up", id);
  }
  // Internal atomic result slots live in the endpoint's registered block, outside scratch().
  Status st = op.atomic_slot >= 0 ? (op.lkey = mr_->lkey, Status::ok())
                                  : check_local(reinterpret_cast<const void*>(op.local), op.len, &op.lkey);
  if (st.is_ok() && is_atomic(op.opcode) && op.local % 8 != 0)
    st = error(Code::kInvalidArgument, "atomic result pointer {:#x} is not 8-byte aligned", op.local);
  if (st.is_ok() && is_atomic(op.opcode) && !dev_.atomics)
    st = error(Code::kUnsupported, "{} does not support RDMA atomics", dev_.name);
  if (st.is_ok() && op.len > dev_.port_attr.max_msg_sz)
    st = error(Code::kInvalidArgument, "one-sided op of {} bytes (the port allows {})", op.len,
               dev_.port_attr.max_msg_sz);
  if (st.is_ok() && c->backlog.size() >= kMaxBacklog)
    st = error(Code::kResourceExhausted, "{} operations queued on connection {}: flush() and poll()", kMaxBacklog, id);
  if (!st.is_ok()) {
    if (op.atomic_slot >= 0) free_atomic_.push_back(op.atomic_slot);
    return st;
  }
  if (!check_remote(*c, id, target, op.len, is_atomic(op.opcode), &op.remote, &op.rkey, op.kind, op.cookie)) {
    if (op.atomic_slot >= 0) free_atomic_.push_back(op.atomic_slot);
    return Status::ok();  // reported as an error completion
  }
  ++stats_.onesided_issued;
  enqueue(*c, id, std::move(op));
  return Status::ok();
}

void VerbsEndpoint::enqueue(Conn& c, ConnId id, Op op) {
  c.backlog.push_back(std::move(op));
  if (!c.dirty) {
    c.dirty = true;
    dirty_.push_back(id);
  }
}

Status VerbsEndpoint::read(ConnId conn, RemotePtr src, void* dst, uint32_t len, uint64_t cookie) {
  Op op;
  op.kind = CompletionKind::kRead;
  op.opcode = IBV_WR_RDMA_READ;
  op.user_signaled = true;
  op.len = len;
  op.local = reinterpret_cast<uint64_t>(dst);
  op.cookie = cookie;
  return issue(conn, std::move(op), src);
}

Status VerbsEndpoint::write(ConnId conn, RemotePtr dst, const void* src, uint32_t len, uint64_t cookie, bool signaled) {
  Op op;
  op.kind = CompletionKind::kWrite;
  op.opcode = IBV_WR_RDMA_WRITE;
  op.user_signaled = signaled;
  op.len = len;
  op.local = reinterpret_cast<uint64_t>(src);
  op.cookie = cookie;
  return issue(conn, std::move(op), dst);
}

Status VerbsEndpoint::write_imm(ConnId conn, RemotePtr dst, const void* src, uint32_t len, uint32_t imm,
                                uint64_t cookie) {
  Op op;
  op.kind = CompletionKind::kWrite;
  op.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  op.user_signaled = true;
  op.len = len;
  op.imm = imm;
  op.local = reinterpret_cast<uint64_t>(src);
  op.cookie = cookie;
  return issue(conn, std::move(op), dst);
}

Status VerbsEndpoint::atomic(ConnId conn, CompletionKind kind, RemotePtr dst, uint64_t arg0, uint64_t arg1,
                             uint64_t* result, uint64_t cookie) {
  Op op;
  op.kind = kind;
  op.opcode = kind == CompletionKind::kCas ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
  op.user_signaled = true;
  op.len = 8;
  op.arg0 = arg0;
  op.arg1 = arg1;
  op.cookie = cookie;
  if (result == nullptr) {
    if (free_atomic_.empty()) return error(Code::kBusy, "all {} internal atomic result slots in use", kAtomicSlots);
    op.atomic_slot = free_atomic_.back();
    free_atomic_.pop_back();
    result = atomic_buf(op.atomic_slot);
  }
  op.result = result;
  op.local = reinterpret_cast<uint64_t>(result);
  return issue(conn, std::move(op), dst);
}

Status VerbsEndpoint::cas(ConnId conn, RemotePtr dst, uint64_t expected, uint64_t desired, uint64_t* result,
                          uint64_t cookie) {
  return atomic(conn, CompletionKind::kCas, dst, expected, desired, result, cookie);
}

Status VerbsEndpoint::faa(ConnId conn, RemotePtr dst, uint64_t add, uint64_t* result, uint64_t cookie) {
  return atomic(conn, CompletionKind::kFaa, dst, add, 0, result, cookie);
}

std::span<std::byte> VerbsEndpoint::packet_buffer(ConnId conn) {
  Conn* c = live(conn);
  if (c == nullptr || c->state != State::kUp) return {};
  if (c->staged < 0) {
    if (free_send_.empty() || c->backlog.size() >= kMaxBacklog) return {};  // out of send credits: poll() first
    c->staged = free_send_.back();
    free_send_.pop_back();
  }
  return {send_buf(c->staged), max_packet_};
}

Status VerbsEndpoint::post_send(ConnId conn, size_t len) {
  Conn* c = live(conn);
  if (c == nullptr || c->state != State::kUp) return error(Code::kUnavailable, "connection {} is not up", conn);
  if (len == 0 || len > max_packet_)
    return error(Code::kInvalidArgument, "packet of {} bytes (max {})", len, max_packet_);
  if (c->staged < 0)
    return error(Code::kInvalidArgument, "post_send() without a packet_buffer() on connection {}", conn);
  Op op;
  op.cls = OpClass::kPacket;
  op.opcode = IBV_WR_SEND;
  op.len = static_cast<uint32_t>(len);
  op.buffer = c->staged;
  op.local = reinterpret_cast<uint64_t>(send_buf(c->staged));
  op.lkey = mr_->lkey;
  c->staged = -1;
  ++stats_.packets_sent;
  stats_.bytes_sent += len;
  enqueue(*c, conn, std::move(op));
  return Status::ok();
}

void VerbsEndpoint::flush() {
  for (size_t i = 0; i < dirty_.size(); ++i) {
    Conn* c = live(dirty_[i]);
    if (c == nullptr) continue;
    c->released = c->backlog.size();
    if (c->qp != nullptr && (c->state == State::kEstablished || c->state == State::kUp)) post_backlog(dirty_[i]);
  }
  prune_dirty();
}

void VerbsEndpoint::prune_dirty() {
  std::erase_if(dirty_, [this](ConnId id) {
    Conn& c = *conns_[id];
    bool keep = c.state != State::kDown && !c.backlog.empty();
    c.dirty = keep;
    return !keep;
  });
}

// Posts up to the send queue's free slots of the released backlog as one chain (one doorbell).
void VerbsEndpoint::post_backlog(ConnId id) {
  Conn& c = *conns_[id];
  const uint32_t room = kSqDepth - static_cast<uint32_t>(c.posted - c.done);
  const uint32_t n = static_cast<uint32_t>(std::min<size_t>(room, c.released));
  if (n == 0) return;
  for (uint32_t i = 0; i < n; ++i) {
    Op& op = c.backlog[i];
    ibv_send_wr& wr = wrs_[i];
    ibv_sge& sge = sges_[i];
    wr = ibv_send_wr{};
    sge = ibv_sge{op.local, op.len, op.lkey};
    wr.wr_id = send_wr_id(id, static_cast<uint32_t>(c.posted + i));
    wr.opcode = op.opcode;
    wr.sg_list = &sge;
    wr.num_sge = op.len > 0 ? 1 : 0;
    wr.next = i + 1 < n ? &wrs_[i + 1] : nullptr;
    const bool inl = may_inline(op.opcode) && op.len > 0 && op.len <= c.max_inline;
    if (inl) {
      wr.send_flags |= IBV_SEND_INLINE;
      ++stats_.inline_sends;
    }
    if (!inl && op.buffer >= 0) c.holds_buffers = true;
    bool sig = op.user_signaled || ++c.unsignaled_run >= kSignalInterval || (i + 1 == n && c.holds_buffers);
    if (sig) {
      wr.send_flags |= IBV_SEND_SIGNALED;
      c.unsignaled_run = 0;
      c.holds_buffers = false;
    }
    if (is_atomic(op.opcode)) {
      wr.wr.atomic.remote_addr = op.remote;
      wr.wr.atomic.rkey = op.rkey;
      wr.wr.atomic.compare_add = op.arg0;
      wr.wr.atomic.swap = op.arg1;
    } else if (op.opcode != IBV_WR_SEND && op.opcode != IBV_WR_SEND_WITH_IMM) {
      wr.wr.rdma.remote_addr = op.remote;
      wr.wr.rdma.rkey = op.rkey;
    }
    if (op.opcode == IBV_WR_SEND_WITH_IMM || op.opcode == IBV_WR_RDMA_WRITE_WITH_IMM) wr.imm_data = htonl(op.imm);
  }
  ibv_send_wr* bad = nullptr;
  int rc = ibv_post_send(c.qp, wrs_.data(), &bad);
  ++stats_.doorbells;
  const uint32_t ok = rc == 0 ? n : static_cast<uint32_t>(bad - wrs_.data());
  for (uint32_t i = 0; i < ok; ++i) {
    Op& slot = c.slots[(c.posted + i) % kSqDepth];
    slot = std::move(c.backlog.front());
    c.backlog.pop_front();
    if ((wrs_[i].send_flags & IBV_SEND_INLINE) && slot.buffer >= 0) {  // copied into the WQE: free already
      free_send_.push_back(slot.buffer);
      slot.buffer = -1;
    }
  }
  c.posted += ok;
  c.released -= ok;
  if (rc != 0) fail(id, Code::kUnavailable, fmt::format("ibv_post_send: {}", strerror(rc)));
}

}  // namespace rdx::transport::verbs
