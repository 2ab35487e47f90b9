// Connection management of the verbs endpoint: librdmacm events, QP creation, the region-table exchange, failures.
#include <arpa/inet.h>
#include <netdb.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "transport/verbs/verbs_endpoint.h"

namespace rdx::transport::verbs {

namespace {
constexpr int kResolveTimeoutMs = 5000;
constexpr uint8_t kAckTimeout = 17;     // 4.096 us * 2^17 = 0.5 s per try (emulated rxe stalls for ms)
constexpr uint8_t kMaxRdAtomic = 16;    // outstanding READ/atomics per QP
constexpr size_t kMaxPrivateData = 64;  // bytes of CM private data we look at

void* conn_context(ConnId id) { return reinterpret_cast<void*>(static_cast<uintptr_t>(id) + 1); }

Result<sockaddr_in> ipv4_sockaddr(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr)
    return error(Code::kInvalidArgument, "cannot resolve '{}': {}", host, gai_strerror(rc));
  sockaddr_in sa = *reinterpret_cast<sockaddr_in*>(res->ai_addr);
  freeaddrinfo(res);
  sa.sin_port = htons(port);
  return sa;
}
}  // namespace

VerbsEndpoint::Conn* VerbsEndpoint::live(ConnId id) {
  if (id >= conns_.size() || conns_[id]->state == State::kDown) return nullptr;
  return conns_[id].get();
}
const VerbsEndpoint::Conn* VerbsEndpoint::live(ConnId id) const {
  if (id >= conns_.size() || conns_[id]->state == State::kDown) return nullptr;
  return conns_[id].get();
}

bool VerbsEndpoint::connected(ConnId conn) const {
  const Conn* c = live(conn);
  return c != nullptr && c->state == State::kUp;
}

Result<ConnId> VerbsEndpoint::connect(const PeerAddr& peer, uint16_t remote_worker) {
  const std::string& host = peer.rdma_addr.empty() ? peer.host : peer.rdma_addr;
  auto dst = ipv4_sockaddr(host, peer.port);
  auto src = ipv4_sockaddr(dev_.local_ip, 0);
  if (!dst || !src) {
    ++stats_.conn_failures;
    return dst ? src.status() : dst.status();
  }
  const ConnId id = static_cast<ConnId>(conns_.size());
  auto conn = std::make_unique<Conn>();
  conn->outgoing = true;
  conn->peer_node = peer.node;
  conn->peer_worker = remote_worker;
  if (rdma_create_id(slot_.channel, &conn->cm, conn_context(id), RDMA_PS_TCP) != 0) {
    ++stats_.conn_failures;
    return error(Code::kInternal, "rdma_create_id: {}", strerror(errno));
  }
  if (rdma_resolve_addr(conn->cm, reinterpret_cast<sockaddr*>(&src.value()), reinterpret_cast<sockaddr*>(&dst.value()),
                        kResolveTimeoutMs) != 0) {
    int e = errno;
    rdma_destroy_id(conn->cm);
    ++stats_.conn_failures;
    return error(Code::kUnavailable, "rdma_resolve_addr({}:{} from {}): {}", host, peer.port, dev_.local_ip,
                 strerror(e));
  }
  conns_.push_back(std::move(conn));
  ++connecting_;
  return id;
}

void VerbsEndpoint::disconnect(ConnId conn) {
  if (live(conn) != nullptr) fail(conn, Code::kUnavailable, "closed locally");
}

Status VerbsEndpoint::grow_cq(size_t qps) {
  const size_t need = kSrqDepth + qps * (kSqDepth + 1);
  if (need <= static_cast<size_t>(cq_capacity_)) return Status::ok();
  const int want = static_cast<int>(
      std::min<size_t>(std::max<size_t>(need, 2 * size_t(cq_capacity_)), static_cast<size_t>(dev_.attr.max_cqe)));
  if (static_cast<size_t>(want) < need)
    return error(Code::kResourceExhausted, "{} connections need a CQ of {} entries; {} allows {}", qps, need, dev_.name,
                 dev_.attr.max_cqe);
  if (int rc = ibv_resize_cq(cq_, want); rc != 0)
    return error(Code::kResourceExhausted, "ibv_resize_cq({}): {}", want, strerror(rc));
  cq_capacity_ = cq_->cqe;
  return Status::ok();
}

Status VerbsEndpoint::create_qp(Conn& c) {
  RDX_RETURN_IF_ERROR(grow_cq(live_qps_ + 1));
  ibv_qp_init_attr a{};
  a.send_cq = cq_;
  a.recv_cq = cq_;
  a.srq = srq_;
  a.qp_type = IBV_QPT_RC;
  a.sq_sig_all = 0;
  a.cap.max_send_wr = kSqDepth;
  a.cap.max_send_sge = 1;
  int rc = -1;
  for (uint32_t inl : {256u, 128u, 64u, 0u}) {  // the largest inline size the device accepts
    a.cap.max_inline_data = inl;
    rc = rdma_create_qp(c.cm, dev_.pd, &a);
    if (rc == 0) break;
  }
  if (rc != 0) return error(Code::kInternal, "rdma_create_qp: {}", strerror(errno));
  c.qp = c.cm->qp;
  c.max_inline = a.cap.max_inline_data;
  c.slots.resize(kSqDepth);
  by_qpn_[c.qp->qp_num] = static_cast<ConnId>(reinterpret_cast<uintptr_t>(c.cm->context) - 1);
  ++live_qps_;
  uint8_t timeout = kAckTimeout;
  rdma_set_option(c.cm, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &timeout, sizeof(timeout));
  return Status::ok();
}

void VerbsEndpoint::adopt_incoming() {
  slot_.pending.store(false, std::memory_order_release);
  uint64_t cnt;
  [[maybe_unused]] ssize_t r = ::read(slot_.eventfd, &cnt, sizeof(cnt));
  std::deque<Incoming> got;
  {
    std::lock_guard<std::mutex> lk(slot_.mu);
    got.swap(slot_.incoming);
  }
  for (const Incoming& in : got) accept_incoming(in);
}

void VerbsEndpoint::accept_incoming(const Incoming& in) {
  const ConnId id = static_cast<ConnId>(conns_.size());
  conns_.push_back(std::make_unique<Conn>());
  Conn& c = *conns_[id];
  c.cm = in.id;
  c.cm->context = conn_context(id);
  c.peer_node = in.hello.node;
  c.peer_worker = in.hello.src_worker;
  c.state = State::kAccepting;
  ++connecting_;
  if (Status st = create_qp(c); !st.is_ok()) {
    Hello reply = transport_.hello(worker_, c.peer_worker, st.code());
    rdma_reject(c.cm, &reply, sizeof(reply));
    fail(id, st.code(), st.message());
    return;
  }
  Hello reply = transport_.hello(worker_, c.peer_worker, Code::kOk);
  rdma_conn_param p{};
  p.private_data = &reply;
  p.private_data_len = sizeof(reply);
  p.responder_resources = std::min<uint8_t>(
      {kMaxRdAtomic, static_cast<uint8_t>(dev_.attr.max_qp_rd_atom), std::max<uint8_t>(in.initiator_depth, 1)});
  p.initiator_depth = std::min<uint8_t>({kMaxRdAtomic, static_cast<uint8_t>(dev_.attr.max_qp_init_rd_atom),
                                         std::max<uint8_t>(in.responder_resources, 1)});
  p.rnr_retry_count = 7;
  if (rdma_accept(c.cm, &p) != 0) fail(id, Code::kUnavailable, fmt::format("rdma_accept: {}", strerror(errno)));
}

void VerbsEndpoint::process_cm_events() {
  rdma_cm_event* ev = nullptr;
  while (rdma_get_cm_event(slot_.channel, &ev) == 0) {
    // Copy what we need and ack first: destroying an id waits for its events to be acked.
    rdma_cm_id* cm = ev->id;
    const rdma_cm_event_type type = ev->event;
    const int status = ev->status;
    std::byte pdata[kMaxPrivateData];
    const size_t plen = std::min<size_t>(ev->param.conn.private_data_len, sizeof(pdata));
    if (plen > 0 && ev->param.conn.private_data != nullptr) std::memcpy(pdata, ev->param.conn.private_data, plen);
    rdma_ack_cm_event(ev);
    if (cm->context == nullptr) adopt_incoming();  // an accepted id whose hand-over we have not read yet
    if (cm->context == nullptr) {
      spdlog::warn("verbs: endpoint w{}: {} for an unknown connection", worker_, rdma_event_str(type));
      continue;
    }
    on_cm_event(static_cast<ConnId>(reinterpret_cast<uintptr_t>(cm->context) - 1), type, status,
                plen > 0 ? pdata : nullptr, plen);
  }
}

void VerbsEndpoint::on_cm_event(ConnId id, rdma_cm_event_type type, int status, const void* pdata, size_t plen) {
  Conn* c = live(id);
  if (c == nullptr) return;
  switch (type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
      if (rdma_resolve_route(c->cm, kResolveTimeoutMs) != 0)
        fail(id, Code::kUnavailable, fmt::format("rdma_resolve_route: {}", strerror(errno)));
      return;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: {
      if (Status st = create_qp(*c); !st.is_ok()) return fail(id, st.code(), st.message());
      Hello hello = transport_.hello(worker_, c->peer_worker, Code::kOk);
      rdma_conn_param p{};
      p.private_data = &hello;
      p.private_data_len = sizeof(hello);
      p.responder_resources = std::min<uint8_t>(kMaxRdAtomic, static_cast<uint8_t>(dev_.attr.max_qp_rd_atom));
      p.initiator_depth = std::min<uint8_t>(kMaxRdAtomic, static_cast<uint8_t>(dev_.attr.max_qp_init_rd_atom));
      p.retry_count = 7;
      p.rnr_retry_count = 7;  // infinite: a busy receiver whose SRQ ran dry is waited for, not failed
      if (rdma_connect(c->cm, &p) != 0)
        return fail(id, Code::kUnavailable, fmt::format("rdma_connect: {}", strerror(errno)));
      c->state = State::kConnecting;
      return;
    }
    case RDMA_CM_EVENT_ESTABLISHED:
      return on_established(id, pdata, plen);
    case RDMA_CM_EVENT_REJECTED: {
      auto reply = decode_hello(pdata, plen);
      if (reply && reply->status != 0)
        return fail(id, Code::kUnavailable,
                    fmt::format("refused by node {}: {}", reply->node, code_name(static_cast<Code>(reply->status))));
      return fail(id, Code::kUnavailable, fmt::format("rejected (reason {}): nobody listening there?", status));
    }
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      return fail(id, Code::kUnavailable, fmt::format("{} ({})", rdma_event_str(type), strerror(-status)));
    case RDMA_CM_EVENT_DISCONNECTED:
      return fail(id, Code::kUnavailable, "peer disconnected");
    default:
      spdlog::debug("verbs: endpoint w{} conn {}: {}", worker_, id, rdma_event_str(type));
      return;
  }
}

void VerbsEndpoint::on_established(ConnId id, const void* pdata, size_t plen) {
  Conn& c = *conns_[id];
  if (c.outgoing) {
    auto reply = decode_hello(pdata, plen);
    if (!reply) return fail(id, Code::kUnavailable, "bad accept reply: " + reply.status().message());
    const TransportConfig& cfg = transport_.config();
    if (reply->status != 0 || reply->epoch != cfg.epoch || reply->max_packet != cfg.max_packet)
      return fail(id, Code::kUnavailable,
                  fmt::format("accept reply status {} epoch {} max_packet {} (ours: epoch {} max_packet {})",
                              reply->status, reply->epoch, reply->max_packet, cfg.epoch, cfg.max_packet));
    if (reply->node != c.peer_node)
      spdlog::warn("verbs: endpoint w{}: connected to node {}, expected node {}", worker_, reply->node, c.peer_node);
    c.peer_node = reply->node;
  }
  // rdma_cm picked the source GID from the address; it must be the one sysfs detection found (RoCE v2, IPv4).
  ibv_qp_attr qa{};
  ibv_qp_init_attr qi{};
  if (ibv_query_qp(c.qp, &qa, IBV_QP_AV, &qi) == 0 && qa.ah_attr.is_global != 0 &&
      qa.ah_attr.grh.sgid_index != dev_.gid_index)
    spdlog::warn(
        "verbs: endpoint w{} conn {}: rdma_cm uses GID index {}, sysfs detection chose {} (RoCE v1 default "
        "mode in configfs?)",
        worker_, id, qa.ah_attr.grh.sgid_index, dev_.gid_index);
  c.state = State::kEstablished;
  --connecting_;
  send_region_table(id);
}

void VerbsEndpoint::send_region_table(ConnId id) {
  Conn* c = live(id);
  if (c == nullptr || c->table_sent) return;
  auto chunks = encode_region_table(transport_.region_table(), max_packet_);
  if (free_send_.size() < chunks.size()) {  // buffers come back as completions retire sends
    table_unsent_.push_back(id);
    return;
  }
  for (const auto& chunk : chunks) {
    Op op;
    op.cls = OpClass::kControl;
    op.opcode = IBV_WR_SEND_WITH_IMM;
    op.imm = kImmRegionTable;
    op.len = static_cast<uint32_t>(chunk.size());
    op.buffer = free_send_.back();
    free_send_.pop_back();
    std::memcpy(send_buf(op.buffer), chunk.data(), chunk.size());
    op.local = reinterpret_cast<uint64_t>(send_buf(op.buffer));
    op.lkey = mr_->lkey;
    enqueue(*c, id, std::move(op));
  }
  c->released = c->backlog.size();
  post_backlog(id);
  c = live(id);
  if (c == nullptr) return;
  c->table_sent = true;
  maybe_up(id);
}

void VerbsEndpoint::maybe_up(ConnId id) {
  Conn& c = *conns_[id];
  if (c.state != State::kEstablished || !c.table_received || !c.table_sent) return;
  c.state = State::kUp;
  emit(c, id, CompletionKind::kConnUp, Code::kOk);
}

void VerbsEndpoint::fail(ConnId id, Code code, const std::string& why) {
  Conn& c = *conns_[id];
  if (c.state == State::kDown) return;
  const bool in_setup = c.state == State::kResolving || c.state == State::kConnecting || c.state == State::kAccepting;
  const bool was_up = c.state == State::kUp;
  if (in_setup) --connecting_;
  spdlog::log(was_up || why == "closed locally" ? spdlog::level::info : spdlog::level::warn,
              "verbs: endpoint w{} conn {} (node {} worker {}) down: {} ({})", worker_, id, c.peer_node, c.peer_worker,
              why, code_name(code));
  for (uint64_t s = c.done; s < c.posted; ++s) retire(c, id, s, Code::kUnavailable, true);
  c.done = c.posted;
  for (Op& op : c.backlog) {
    if (op.cls == OpClass::kUser) emit(c, id, op.kind, Code::kUnavailable, op.cookie);
    release(op);
  }
  c.backlog.clear();
  c.released = 0;
  if (c.staged >= 0) free_send_.push_back(c.staged);
  c.staged = -1;
  c.state = State::kDown;
  ++stats_.conn_failures;
  // The caller knows outgoing connections and accepted ones it saw come up; others vanish silently.
  if (c.outgoing || was_up) emit(c, id, CompletionKind::kConnDown, Code::kUnavailable);
  if (c.cm != nullptr && c.qp != nullptr) rdma_disconnect(c.cm);  // QP to error: the NIC stops touching our memory
  if (c.cm != nullptr || c.qp != nullptr) buried_.push_back(id);
}

void VerbsEndpoint::destroy_buried() {
  for (ConnId id : buried_) {
    Conn& c = *conns_[id];
    if (c.qp != nullptr) {
      by_qpn_.erase(c.qp->qp_num);
      rdma_destroy_qp(c.cm);
      c.qp = nullptr;
      --live_qps_;
    }
    if (c.cm != nullptr) rdma_destroy_id(c.cm);
    c.cm = nullptr;
    c.slots.clear();
    c.slots.shrink_to_fit();
    c.peer_regions.clear();
  }
  buried_.clear();
}

}  // namespace rdx::transport::verbs
