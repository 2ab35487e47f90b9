#include "server/worker.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include "cluster/kv_api.h"
#include "cluster/topology_change.h"
#include "common/thread.h"
#include "rpc/codec.h"
#include "server/node.h"

namespace rdx::server {

using Clock = std::chrono::steady_clock;
using rpc::Task;

namespace {
constexpr auto kTick = std::chrono::milliseconds(100);
constexpr auto kMaxBackoff = std::chrono::milliseconds(1000);
constexpr uint32_t kFirstWarnAttempt = 10;   // about 6 s after the first attempt (backoff 50 ms doubling to 1 s)
constexpr uint32_t kWarnEveryAttempts = 30;  // then, at the 1 s backoff cap, about a warning every 30 s per peer
constexpr int kIdleSpins = 64;               // empty loop iterations before the worker blocks on its fds
constexpr size_t kMaxTopologyPush = 60000;   // a topology handed to a peer travels in one message (max_packet 64 KiB)
}  // namespace

Worker::Worker(Node& node, uint16_t index) : node_(node), index_(index), topology_(&node.topology()) {}

Worker::~Worker() {
  request_stop();
  join();
}

store::HashTable& Worker::table() { return node_.table(); }
const cluster::Topology& Worker::topology() const { return *topology_; }
uint16_t Worker::self() const { return node_.self(); }
cluster::Membership& Worker::membership() { return node_.membership(); }

// The process's incarnation (the low 16 bits of its start time in ms): a restarted node's sequences start again,
// and its new ids must not be taken for those of transactions its predecessor left for recovery (txn/dandelion).
static uint64_t incarnation() {
  static const uint64_t value = [] {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec * 1000 + ts.tv_nsec / 1000000) & 0xffff;
  }();
  return value;
}

uint64_t Worker::next_writer_id() {
  return (incarnation() << 48) | (uint64_t{self() & 0x3ffu} << 38) | (uint64_t{index_ & 0x3fu} << 32) | ++writer_seq_;
}

std::optional<transport::ConnId> Worker::peer(uint16_t node) const {
  if (node >= peers_.size() || !peers_[node].up) return std::nullopt;
  if (node_.partitioned_from().load(std::memory_order_relaxed) == node) return std::nullopt;  // tests
  return peers_[node].conn;
}

Status Worker::start() {
  wake_ = net::UniqueFd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  thread_ = start_thread([this] { run(); });
  while (!init_done_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return init_status_;
}

void Worker::request_stop() {
  stop_.store(true);
  if (wake_) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(wake_.get(), &one, sizeof(one));
  }
}

void Worker::join() {
  if (thread_.joinable()) thread_.join();
}

WorkerSnapshot Worker::snapshot() const {
  std::lock_guard<std::mutex> lk(snap_mu_);
  return published_;
}

Status Worker::init_in_thread() {
  auto ep = node_.transport().create_endpoint(index_);
  if (!ep) return ep.status();
  ep_ = std::move(ep.value());
  topology_ = &node_.topology();
  const cluster::Topology& t = *topology_;
  membership().note_adopted_epoch(index_, t.epoch);
  rpc::RpcConfig rc;
  rc.epoch = cluster::restart_fingerprint(t);  // nodes of two membership epochs talk (cluster/topology_change.h)
  rc.batching = t.batching;
  rc.max_batch_bytes = t.batch_max_bytes;
  rc.max_batch_messages = t.batch_max_messages;
  rpc_ = std::make_unique<rpc::Rpc>(*ep_, sched_, rc);
  rpc_->on_connection([this](const transport::Completion& c) { on_conn_event(c); });
  if (!node_.options().test_partition_peer.empty() && !node_.options().test_partition_one_way)
    rpc_->drop_messages_from(&node_.partitioned_from());
  session_.emplace(node_.table().session());
  local_reads_ = std::make_unique<cluster::LocalReads>(*rpc_, sched_, node_.table(), *session_);
  peers_.resize(t.nodes.size());
  membership_gen_ = membership().generation();
  replication_ = node_.replication().make_worker(*this);
  RDX_RETURN_IF_ERROR(replication_->start());
  failure_detector_ = std::make_unique<cluster::FailureDetector>(
      *this, cluster::FailureDetector::Hooks{[this](uint16_t n) { replication_->on_peer_lost(n); },
                                             [this](uint16_t n) { hand_topology_to(n); },
                                             [this](uint16_t n) { rpc::spawn(fetch_topology_from(n)); }});
  RDX_RETURN_IF_ERROR(failure_detector_->start());
  address_relay_.emplace(*this, node_.transport());
  RDX_RETURN_IF_ERROR(address_relay_->start());
  if (const txn::CcEntry* cc = node_.cc()) {
    txn_ = std::make_unique<txn::TxnServiceImpl>(*this, *replication_->replica_log(), *cc, node_.primitives(),
                                                 node_.txn_options());
    RDX_RETURN_IF_ERROR(txn_->start());
  }
  RDX_RETURN_IF_ERROR(register_client_api());
  RDX_RETURN_IF_ERROR(rpc_->on(cluster::kTopologyPush, [this](const rpc::Incoming& in) {
    // (One-way. The follower checks the change as it does the file's.)
    offer_topology_from(in.peer_node, std::string(reinterpret_cast<const char*>(in.payload.data()), in.payload.size()));
  }));
  RDX_RETURN_IF_ERROR(rpc_->on(cluster::kTopologyPull, [this](const rpc::Incoming& in) {
    const std::string text = node_.topology_text();
    if (!in.payload.empty() || in.peer_node >= transport::kFirstClientNode || text.empty() ||
        text.size() > kMaxTopologyPush)
      return rpc_->respond(in.reply_to(), Code::kUnavailable);
    rpc_->respond(in.reply_to(), Code::kOk, rpc::as_bytes_of(text));
  }));
  if (index_ == 0) {
    rpc::spawn(replication_->recover());
    if (t.failure.enabled && node_.spec().role == cluster::Role::kData) rpc::spawn(failure_detector_->run());
  }
  service_env_.emplace(ServiceEnv{*this, *replication_, txn_.get(), node_.options().listen_host,
                                  node_.spec().redis_port, node_.password(), [this] { return node_.info_text(); }});
  for (const ServiceFactory& make : node_.service_factories()) {
    auto svc = make(*service_env_);
    if (!svc) return svc.status();
    if (svc.value()) services_.push_back(std::move(svc.value()));
  }
  return Status::ok();
}

// Every worker coordinates transactions, and coordinators talk to primaries and backups directly.
bool Worker::needs_peer(uint16_t n) const {
  const cluster::Topology& t = topology();
  return n != self() && t.nodes[n].role == cluster::Role::kData;
}

void Worker::connect_peers() {
  const cluster::Topology& t = topology();
  auto now = Clock::now();
  bool all_up = true;
  std::string waiting;
  for (uint16_t n = 0; n < t.nodes.size(); ++n) {
    if (!needs_peer(n)) continue;
    Peer& p = peers_[n];
    // Ready means connected to every needed peer, except replicas this primary excluded (they rejoin on their own).
    if (!p.up && membership().member(n) != cluster::MemberState::kFailed) {
      all_up = false;
      waiting += fmt::format("{}{} ({})", waiting.empty() ? "" : ", ", t.nodes[n].name,
                             p.last_error.empty() ? "connecting" : p.last_error);
    }
    if (p.conn || now < p.next_attempt) continue;
    const cluster::NodeSpec& spec = t.nodes[n];
    auto c = ep_->connect({n, spec.host, spec.port, spec.rdma_addr}, index_);
    if (c) {
      p.conn = c.value();
    } else {
      note_connect_failure(n, c.status().to_string());
    }
  }
  live_.peers_up = all_up;
  live_.peers_waiting = std::move(waiting);
}

// A peer that is not up yet is normal while a cluster starts (it refuses until it listens); one that stays
// unreachable (a name that does not resolve, no route to its RDMA address) is worth a warning now and then.
void Worker::note_connect_failure(uint16_t node, std::string why) {
  Peer& p = peers_[node];
  p.next_attempt = Clock::now() + p.backoff;
  p.backoff = std::min(p.backoff * 2, kMaxBackoff);
  ++p.failed_attempts;
  p.last_error = std::move(why);
  const std::string& name = topology().nodes[node].name;
  if (p.failed_attempts == kFirstWarnAttempt || p.failed_attempts % kWarnEveryAttempts == 0)
    spdlog::warn("worker {}: still cannot connect to {} after {} attempts: {}", index_, name, p.failed_attempts,
                 p.last_error);
  else
    spdlog::debug("worker {}: connect to {} failed: {}", index_, name, p.last_error);
}

// Whether `node` may be sent another topology message of a kind whose last send times `last` holds: at most twice a
// second per peer (an epoch is applied within 100 ms of its arrival; TopologyFollower).
static bool due(std::unordered_map<uint16_t, Clock::time_point>& last, uint16_t node) {
  const auto now = Clock::now();
  auto [it, fresh] = last.try_emplace(node, now);
  if (!fresh && now - it->second < std::chrono::milliseconds(500)) return false;
  it->second = now;
  return true;
}

// `node` runs an older epoch (its heartbeat or answer said so): hand it this node's topology file.
void Worker::hand_topology_to(uint16_t node) {
  auto conn = peer(node);
  if (!conn || !due(last_handed_, node)) return;
  const std::string text = node_.topology_text();
  if (text.empty()) return;
  if (text.size() > kMaxTopologyPush) {
    if (!warned_large_topology_)
      spdlog::warn("worker {}: the topology file ({} bytes) is too large to hand to peers; they read their own copy",
                   index_, text.size());
    warned_large_topology_ = true;
    return;
  }
  (void)rpc_->send_oneway(*conn, cluster::kTopologyPush, rpc::as_bytes_of(text));
}

// `node` runs a newer epoch that does not have this node: ask it for its topology file.
Task<void> Worker::fetch_topology_from(uint16_t node) {
  auto conn = peer(node);
  if (!conn || !due(last_fetched_, node)) co_return;
  rpc::Response r = co_await rpc_->call(*conn, cluster::kTopologyPull, {});
  if (r.status == Code::kOk) offer_topology_from(node, std::move(r.payload));
}

// A topology another node handed over: offered to the follower only when it comes from a data node of its own
// epoch, newer than this node's (a client, or a node that is not in the topology it sends, hands nothing over).
void Worker::offer_topology_from(uint32_t from, std::string text) {
  if (from >= transport::kFirstClientNode || text.empty() || text.size() > kMaxTopologyPush) return;
  auto t = cluster::parse_topology(text);
  if (!t || t.value().epoch <= topology().epoch || from >= t.value().nodes.size() ||
      t.value().nodes[from].role != cluster::Role::kData)
    return;
  node_.offer_topology(std::move(text), t.value().epoch);
}

// A new epoch the node applied (Node::apply_topology): this worker uses it from now on. Connections to removed
// nodes close; the failure detector, the leases and the protocols learn who is a data node now.
void Worker::adopt_topology() {
  const cluster::Topology* newest = &node_.topology();
  if (newest == topology_) return;
  const cluster::Topology& old = *topology_;
  topology_ = newest;
  const cluster::Topology& t = *topology_;
  peers_.resize(t.nodes.size());
  for (uint16_t n = 0; n < old.nodes.size(); ++n) {
    if (old.nodes[n].role != cluster::Role::kData || t.nodes[n].role == cluster::Role::kData) continue;
    if (peers_[n].conn) ep_->disconnect(*peers_[n].conn);
    peers_[n] = Peer{};
    if (index_ == 0) failure_detector_->forget(n);
  }
  // The leases' peers change on the failure detector's thread (it renews them).
  if (index_ == 0) membership().leases().set_peers(cluster::other_data_nodes(t, self()));
  replication_->on_topology_change();
  membership().note_adopted_epoch(index_, t.epoch);  // (after the protocols recomputed their replica sets)
  spdlog::info("worker {}: epoch {} adopted", index_, t.epoch);
}

void Worker::on_conn_event(const transport::Completion& c) {
  // Only our outgoing connections are tracked as peers; incoming ones (peers' and clients') are answered in place.
  for (uint16_t n = 0; n < peers_.size(); ++n) {
    Peer& p = peers_[n];
    if (!p.conn || *p.conn != c.conn) continue;
    if (c.kind == transport::CompletionKind::kConnUp) {
      p.up = true;
      p.backoff = std::chrono::milliseconds(50);
      p.failed_attempts = 0;
      p.last_error.clear();
      spdlog::info("worker {}: connected to {}", index_, topology().nodes[n].name);
      replication_->on_peer_back(n);
    } else if (c.kind == transport::CompletionKind::kConnDown) {
      bool was_up = p.up;
      p.up = false;
      p.conn.reset();
      if (!was_up) {  // a refused attempt (peer not started yet) is not a failure of an established replica
        note_connect_failure(n, fmt::format("connection refused or failed ({})", code_name(c.status)));
        return;
      }
      p.next_attempt = Clock::now() + p.backoff;
      p.backoff = std::min(p.backoff * 2, kMaxBackoff);
      spdlog::warn("worker {}: lost connection to {}", index_, topology().nodes[n].name);
      replication_->on_peer_lost(n);
    }
    return;
  }
}

bool Worker::admit_client(const rpc::Incoming& in, OpIndex op, const char* malformed) {
  if (malformed != nullptr) {
    ++live_.op_errors[op];
    rpc_->respond(in.reply_to(), Code::kInvalidArgument, rpc::as_bytes_of(std::string_view(malformed)));
    return false;
  }
  if (membership().stopping()) {
    ++live_.op_errors[op];
    rpc_->respond(in.reply_to(), Code::kUnavailable, rpc::as_bytes_of(std::string_view("shutting down")));
    return false;
  }
  return true;
}

Status Worker::register_client_api() {
  auto handler = [this](OpIndex op) {
    return [this, op](const rpc::Incoming& in) {
      rpc::Reader r(in.payload);
      std::string key(r.bytes(cluster::kMaxKeyBytes));
      std::string value;
      if (op == kPutOp) value = std::string(r.bytes(store::kMaxValueBytes));
      const bool ok = r.done() && !key.empty();
      if (admit_client(in, op, ok ? nullptr : "malformed request (key must be 1..1024 bytes, value <= 1 MiB)"))
        rpc::spawn(serve_client(in.reply_to(), op, std::move(key), std::move(value)));
    };
  };
  RDX_RETURN_IF_ERROR(rpc_->on(cluster::kKvGet, handler(kGetOp)));
  RDX_RETURN_IF_ERROR(rpc_->on(cluster::kKvPut, handler(kPutOp)));
  RDX_RETURN_IF_ERROR(rpc_->on(cluster::kKvDel, handler(kDelOp)));
  return rpc_->on(cluster::kKvWrite, [this](const rpc::Incoming& in) {
    rpc::Reader r(in.payload);
    std::string key(r.bytes(cluster::kMaxKeyBytes));
    replication::Rmw op;
    const bool ok = replication::Rmw::decode(r, &op) && r.done() && !key.empty();
    if (admit_client(in, kWriteOp,
                     ok ? nullptr
                        : "malformed write (key 1..1024 bytes, then an operation: kind 0..3, condition 0..3, "
                          "value and expected value <= 1 MiB each, nothing after it)"))
      rpc::spawn(serve_client_write(in.reply_to(), std::move(key), std::move(op)));
  });
}

void Worker::count_client_op(OpIndex op, Code status, Clock::time_point t0) {
  --live_.inflight;
  ++live_.ops[op];
  if (status != Code::kOk && status != Code::kNotFound) ++live_.op_errors[op];
  live_.latency[op].record(static_cast<uint64_t>(std::chrono::nanoseconds(Clock::now() - t0).count()));
}

Task<void> Worker::serve_client(rpc::ReplyTo to, OpIndex op, std::string key, std::string value) {
  auto t0 = Clock::now();
  ++live_.inflight;
  Code status = Code::kOk;
  uint64_t version = 0;
  std::string error;
  rpc::Writer w;
  // (Plain if/else: GCC 12 miscompiles co_await inside a conditional expression.)
  if (op == kGetOp) {
    cluster::KvResult r = co_await replication_->get(std::move(key));
    status = r.status;
    version = r.version;
    value = std::move(r.value);
    error = std::move(r.error);
  } else {
    replication::Rmw rmw = op == kPutOp ? replication::Rmw::put(std::move(value)) : replication::Rmw::remove();
    replication::WriteResult r = co_await replication_->write(std::move(key), std::move(rmw));
    status = r.status == Code::kOk && op == kDelOp && !r.existed ? Code::kNotFound : r.status;
    version = r.version;
    error = std::move(r.error);
  }
  count_client_op(op, status, t0);
  if (status == Code::kOk) {
    w.put(version);
    if (op == kGetOp) w.bytes(value);
    rpc_->respond(to, status, w.span());
  } else {
    rpc_->respond(to, status, rpc::as_bytes_of(error));
  }
}

Task<void> Worker::serve_client_write(rpc::ReplyTo to, std::string key, replication::Rmw op) {
  auto t0 = Clock::now();
  ++live_.inflight;
  replication::WriteResult r = co_await replication_->write(std::move(key), std::move(op));
  count_client_op(kWriteOp, r.status, t0);
  rpc::Writer w;
  r.encode(w);
  rpc_->respond(to, Code::kOk, w.span());
}

void Worker::publish() {
  live_.transport = ep_->stats();
  live_.rpc = rpc_->stats();
  std::lock_guard<std::mutex> lk(snap_mu_);
  published_ = live_;
}

void Worker::wait_for_work() {
  ep_->arm();
  // Closes the race between arm() and blocking; anything it delivered is handled by the next loop iteration
  // (handlers may have queued responses or batched reads), so do not block then.
  if (rpc_->poll() > 0 || !sched_.idle()) return;
  pollfd fds[4] = {{ep_->wait_fd(), POLLIN, 0}, {wake_.get(), POLLIN, 0}, {-1, POLLIN, 0}, {-1, POLLIN, 0}};
  nfds_t n = 2;
  for (const auto& svc : services_)
    if (int fd = svc->wait_fd(); fd >= 0 && n < std::size(fds)) fds[n++] = {fd, POLLIN, 0};
  // At most 5 ms, and no longer than until the next timer (a coroutine sleeping 1 ms must not sleep 5).
  int64_t timeout_ms = 5;
  if (auto next = sched_.next_timer()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - rpc::Scheduler::Clock::now()).count();
    timeout_ms = std::clamp<int64_t>(left, 0, timeout_ms);
  }
  ::poll(fds, n, static_cast<int>(timeout_ms));
  if (fds[1].revents != 0) {
    uint64_t v;
    [[maybe_unused]] ssize_t r = ::read(wake_.get(), &v, sizeof(v));
  }
}

// One loop iteration's work: the network, the services, ready coroutines, then the local reads they queued as one
// prefetched batch.
size_t Worker::poll_once() {
  size_t work = rpc_->poll();
  for (auto& svc : services_) work += svc->poll();
  work += sched_.run_ready();
  work += local_reads_->run_batch();
  return work;
}

void Worker::run() {
  init_status_ = init_in_thread();
  init_done_.store(true);
  if (!init_status_.is_ok()) return;
  auto next_tick = Clock::now();
  int idle = 0;
  bool busy_poll = node_.options().busy_poll;
  while (!stop_.load(std::memory_order_relaxed)) {
    size_t work = poll_once();
    auto now = Clock::now();
    if (now >= next_tick) {
      next_tick = now + kTick;
      adopt_topology();
      connect_peers();
      if (uint64_t gen = membership().generation(); gen != membership_gen_) {
        membership_gen_ = gen;
        replication_->on_membership_change();
      }
      replication_->tick();
      if (index_ == 0 && node_.spec().role == cluster::Role::kData) address_relay_->tick();
      publish();
    }
    rpc_->flush();
    if (work == 0 && sched_.idle()) {
      if (++idle > kIdleSpins && !busy_poll) wait_for_work();
    } else {
      idle = 0;
    }
  }
  // Graceful stop: keep running until every coroutine has finished (client operations in flight, calls waiting for
  // answers, background loops such as recovery, which end once they see the node stopping), for a bounded time.
  for (auto& svc : services_) svc->stop_accepting();
  auto deadline = Clock::now() + std::chrono::seconds(10);
  auto busy = [this] {
    size_t in_services = 0;
    for (const auto& svc : services_) in_services += svc->inflight();
    return live_.inflight > 0 || in_services > 0 || !sched_.idle() || sched_.next_timer().has_value() ||
           rpc_->pending_calls() > 0;
  };
  while (busy() && Clock::now() < deadline) {
    size_t work = poll_once();
    rpc_->flush();
    if (work == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // waiting on a timer or a peer
  }
  if (busy()) {
    size_t in_services = 0;
    for (const auto& svc : services_) in_services += svc->inflight();
    spdlog::warn(
        "worker {}: stopping with work left after 10 s: {} operations in flight, {} in services, {} calls "
        "waiting for answers, coroutines {}, a timer {}",
        index_, live_.inflight, in_services, rpc_->pending_calls(), sched_.idle() ? "idle" : "runnable",
        sched_.next_timer().has_value() ? "set" : "unset");
  }
  services_.clear();
  publish();
  // Close this worker's connections now: peers waiting for its answers fail at once instead of waiting out their
  // timeouts while the other workers of this node drain.
  txn_.reset();
  failure_detector_.reset();
  replication_.reset();
  local_reads_.reset();
  rpc_.reset();
  ep_.reset();
}

}  // namespace rdx::server
