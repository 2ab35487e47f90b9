#include "server/node.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "cluster/msg_ids.h"
#include "cluster/topology_change.h"
#include "server/worker.h"

namespace rdx::server {

Node::Node(cluster::Topology topo, NodeOptions opts, uint16_t self)
    : opts_(std::move(opts)),
      self_(self),
      membership_(std::make_unique<cluster::Membership>(cluster::kMaxNodes, topo.workers, topo.initial_primaries())) {
  epochs_.push_back(std::make_unique<const cluster::Topology>(std::move(topo)));
  topology_.store(epochs_.back().get(), std::memory_order_release);
}

Node::~Node() { stop(); }

Result<std::vector<NamedRange>> message_ranges() {
  std::vector<NamedRange> all;
  for (const rpc::MsgRange& r : cluster::msgs::kServices) all.push_back({fmt::format("service range {}", r.first), r});
  auto family = [&](const auto& registry, rpc::MsgRange block) -> Status {
    for (const auto& e : registry.entries()) {
      if (!block.contains(e.msgs.first) || !block.contains(e.msgs.last()))
        return error(Code::kInternal, "{} '{}': message types {}..{} are outside its family's block {}..{}",
                     registry.family(), e.name, e.msgs.first, e.msgs.last(), block.first, block.last());
      all.push_back({fmt::format("{} '{}'", registry.family(), e.name), e.msgs});
    }
    return Status::ok();
  };
  RDX_RETURN_IF_ERROR(family(replication::replication_protocols(), cluster::msgs::kReplicationBlock));
  RDX_RETURN_IF_ERROR(family(txn::cc_protocols(), cluster::msgs::kTxnBlock));
  return all;
}

Status check_disjoint(const std::vector<NamedRange>& all) {
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (all[i].range.overlaps(all[j].range))
        return error(Code::kInternal, "message types of {} ({}..{}) overlap those of {} ({}..{})", all[i].name,
                     all[i].range.first, all[i].range.last(), all[j].name, all[j].range.first, all[j].range.last());
  return Status::ok();
}

// The transaction protocol a topology names, if any (txn.protocol "none": none), checked against the replication
// protocol (families and keys, replication/README.md) and the primitives.
Result<const txn::CcEntry*> transaction_protocol(const cluster::Topology& topo,
                                                 const replication::ReplicationEntry& rep, txn::Primitives* prims) {
  if (topo.txn_protocol == cluster::kNoTxnProtocol) {
    if (topo.primitives != "rpc")
      return error(Code::kInvalidArgument,
                   "transport.primitives '{}' chooses the primitives of a transaction protocol, and txn.protocol is "
                   "'none' (use rpc)",
                   topo.primitives);
    return static_cast<const txn::CcEntry*>(nullptr);
  }
  auto cc = txn::cc_protocols().lookup(topo.txn_protocol);
  if (!cc) return cc.status();
  if (!rep.carries_transactions)
    return error(Code::kUnsupported,
                 "replication protocol '{}' replicates single keys only: it cannot carry transaction protocol '{}' "
                 "(every write of a key must reach its replicas one way); use txn.protocol 'none'",
                 rep.name, topo.txn_protocol);
  auto p = txn::primitives_for(*cc.value(), topo.primitives, topo.onesided_phases);
  if (!p) return p.status();
  *prims = std::move(p.value());
  return cc.value();
}

Result<std::unique_ptr<Node>> Node::create(cluster::Topology topo, NodeOptions opts) {
  auto ranges = message_ranges();
  if (!ranges) return ranges.status();
  RDX_RETURN_IF_ERROR(check_disjoint(ranges.value()));
  const cluster::NodeSpec* me = topo.find_node(opts.node_name);
  if (me == nullptr) return error(Code::kInvalidArgument, "node '{}' is not in the topology", opts.node_name);
  if (me->role != cluster::Role::kData)
    return error(Code::kUnsupported, "node '{}': role {} is not implemented yet (only data nodes)", opts.node_name,
                 me->role == cluster::Role::kRo ? "ro" : "proxy");
  auto rep = replication::replication_protocols().lookup(topo.replication);
  if (!rep) return rep.status();
  txn::Primitives prims;
  auto cc = transaction_protocol(topo, *rep.value(), &prims);
  if (!cc) return cc.status();
  std::unique_ptr<Node> n(new Node(std::move(topo), std::move(opts), me->id));
  n->replication_entry_ = rep.value();
  n->cc_ = cc.value();
  n->primitives_ = std::move(prims);
  const cluster::Topology& t = n->topology();
  n->txn_options_.local_backup_reads = t.local_backup_reads;
  n->txn_options_.ht_batching = t.ht_batching;
  n->txn_options_.faults = n->opts_.txn_faults;
  n->membership_->leases().configure(t.failure.enabled, std::chrono::milliseconds(t.failure.timeout_ms),
                                     cluster::other_data_nodes(t, n->self_), n->opts_.faults.reads_without_lease);
  n->replication_ = rep.value()->make(
      replication::NodeEnv{n->self_, *n->membership_, rep.value()->msgs, t.local_backup_reads, n->opts_.faults});
  return n;
}

Status Node::start() {
  const cluster::NodeSpec& me = spec();
  const cluster::Topology& topo = topology();
  RDX_RETURN_IF_ERROR(load_password());
  auto arena = MemoryBlock::allocate(size_t{topo.memory_mb} << 20, topo.hugepages);
  if (!arena) return arena.status();
  arena_ = std::move(arena.value());
  spdlog::info("node {}: store arena {} MiB on {} pages", me.name, arena_.size() >> 20,
               arena_.huge() ? "2 MB huge" : "4 KB");
  store::TableConfig tc;
  tc.arena = arena_.span();
  auto table = store::HashTable::create(tc);
  if (!table) return table.status();
  table_ = std::move(table.value());

  transport::TransportConfig cfg;
  cfg.kind = topo.transport;
  cfg.node = self_;
  cfg.listen_host = opts_.listen_host;
  cfg.listen_port = me.port;
  cfg.workers = static_cast<uint16_t>(topo.workers);
  cfg.epoch = cluster::restart_fingerprint(topo);  // nodes of two membership epochs talk (topology_change.h)
  cfg.hugepages = topo.hugepages;
  cfg.device = topo.device;
  cfg.gid_index = topo.gid_index;
  cfg.rdma_interface = topo.rdma_interface;
  cfg.rdma_addr = me.rdma_addr;
  cfg.max_packet = 64 * 1024;  // large single messages (values) travel alone; small ones batch up to the batch cap
  auto t = transport::make_transport(cfg);
  if (!t) return t.status();
  transport_ = std::move(t.value());
  started_ = true;  // from here on, a failed start is undone by stop() (workers may be running)
  RDX_RETURN_IF_ERROR(transport_->register_region(cluster::kStoreRegion, arena_.data(), arena_.size()));

  for (uint16_t w = 0; w < topo.workers; ++w) {
    workers_.push_back(std::make_unique<Worker>(*this, w));
    RDX_RETURN_IF_ERROR(workers_.back()->start());
  }
  register_metrics();
  http_.route("/healthz", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  http_.route("/readyz", [this] {
    bool r = ready();
    return HttpResponse{r ? 200 : 503, "text/plain", readiness_detail()};
  });
  http_.route("/metrics", [this] { return HttpResponse{200, "text/plain; version=0.0.4", metrics_.render()}; });
  RDX_RETURN_IF_ERROR(http_.start(opts_.http_host, me.http_port));
  spdlog::info("node {} ({} of {}): {} transport on port {}, {} workers, http on {}, replication {}, transactions {}",
               me.name, self_, topo.nodes.size(), topo.transport, transport_->listen_port(), topo.workers, http_.port(),
               topo.replication, topo.txn_protocol);
  return Status::ok();
}

Result<bool> Node::apply_topology(const cluster::Topology& next, std::string text) {
  std::lock_guard<std::mutex> lk(apply_mu_);
  const cluster::Topology& running = topology();
  auto planned = cluster::plan_topology_change(running, next, self_);
  if (!planned) return planned.status();
  cluster::TopologyChange& change = planned.value();
  if (change.self_removed) return true;
  // A removed node may still read its copy under a lease granted here: no new grants, and it is cut off (no more
  // writes from here) only once the last grant has ended, as in any exclusion (cluster/leases.h).
  // (A join of the node that reached a worker still on the old epoch restores it: revoke again until excluded.)
  for (uint16_t n : change.removed)
    while (membership_->member(n) != cluster::MemberState::kFailed) {
      membership_->leases().revoke(n);
      if (membership_->try_exclude(n, std::chrono::steady_clock::now()) != cluster::Membership::Exclusion::kExcluded)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  // A new node holds nothing yet: excluded until it joins (recovery copies its shard while it takes new writes).
  for (uint16_t n : change.added) membership_->set_member(n, cluster::MemberState::kFailed);
  if (change.rejoin) {
    spdlog::warn("node {}: epoch {} skips epochs this node missed (it runs {}); leaving sync to copy its shard again",
                 spec().name, change.merged.epoch, running.epoch);
    membership_->set_in_sync(false);
    membership_->note_excluded();
  }
  auto names = [&](const std::vector<uint16_t>& ids) {
    std::string out;
    for (uint16_t n : ids) out += fmt::format("{}{}", out.empty() ? "" : ", ", change.merged.nodes[n].name);
    return out.empty() ? std::string("none") : out;
  };
  spdlog::info("node {}: epoch {} -> {} applied without a restart: added [{}], removed [{}]", spec().name,
               running.epoch, change.merged.epoch, names(change.added), names(change.removed));
  epochs_.push_back(std::make_unique<const cluster::Topology>(std::move(change.merged)));
  set_topology_text(std::move(text));
  topology_.store(epochs_.back().get(), std::memory_order_release);
  return false;
}

void Node::toggle_test_partition() {
  const cluster::Topology& topo = topology();
  const cluster::NodeSpec* peer = topo.find_node(opts_.test_partition_peer);
  if (peer == nullptr) return;
  const bool on = partitioned_from_.load() != peer->id;
  partitioned_from_.store(on ? peer->id : -1);
  spdlog::warn("rdxd: test partition from {} {}", peer->name, on ? "on" : "healed");
}

void Node::stop() {
  if (!started_) return;
  started_ = false;
  membership_->set_stopping();
  for (auto& w : workers_) w->request_stop();
  for (auto& w : workers_) w->join();
  http_.stop();
  workers_.clear();
  transport_.reset();
}

// The Redis password: $RDX_PASSWORD, else the first line of auth.password_file (so it can come from a Secret).
Status Node::load_password() {
  const cluster::Topology& topo = topology();
  if (const char* env = std::getenv("RDX_PASSWORD"); env != nullptr && *env != '\0') {
    password_ = env;
    return Status::ok();
  }
  if (topo.password_file.empty()) return Status::ok();
  std::ifstream in(topo.password_file);
  if (!in) return error(Code::kInvalidArgument, "auth.password_file '{}' cannot be read", topo.password_file);
  std::getline(in, password_);
  while (!password_.empty() && (password_.back() == '\r' || password_.back() == ' ')) password_.pop_back();
  if (password_.empty()) return error(Code::kInvalidArgument, "auth.password_file '{}' is empty", topo.password_file);
  return Status::ok();
}

std::string Node::info_text() const {
  const cluster::Topology& topo = topology();
  store::TableStats ts = table_->stats();
  return fmt::format(
      "# Server\r\nrdx_version:0.1.0\r\nredis_version:7.0.0\r\nrdx_cluster:{}\r\nrdx_node:{}\r\nrdx_epoch:{}\r\n"
      "rdx_transport:{}\r\nrdx_replication:{}\r\nrdx_txn_protocol:{}\r\nrdx_shards:{}\r\nrdx_nodes:{}\r\n"
      "\r\n# Replication\r\nrole:{}\r\nrdx_in_sync:{}\r\n"
      "\r\n# Memory\r\nused_memory:{}\r\nmaxmemory:{}\r\n"
      "\r\n# Keyspace\r\ndb0:keys={},expires=0,avg_ttl=0\r\n",
      topo.cluster, spec().name, topo.epoch, topo.transport, topo.replication, topo.txn_protocol, topo.shards.size(),
      cluster::data_node_count(topo), is_primary() ? "master" : "slave", membership_->in_sync() ? 1 : 0, ts.arena_used,
      ts.arena_size, ts.keys);
}

bool Node::is_primary() const {
  return spec().role == cluster::Role::kData && membership_->primary(static_cast<uint32_t>(spec().shard)) == self_;
}

bool Node::hand_over(std::chrono::milliseconds limit) {
  if (!started_ || spec().role != cluster::Role::kData || !is_primary()) return false;
  membership_->set_handover(cluster::Membership::Handover::kRequested);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (membership_->handover() != cluster::Membership::Handover::kDone && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return !is_primary();
}

bool Node::ready() const {
  if (!membership_->in_sync() || membership_->resigning()) return false;
  // A primary serves only while a majority of the data nodes grants it leases (cluster/leases.h).
  if (is_primary() && !membership_->leases().authority(std::chrono::steady_clock::now())) return false;
  for (const auto& w : workers_)
    if (!w->snapshot().peers_up) return false;
  return !workers_.empty();
}

std::string Node::readiness_detail() const {
  const cluster::Topology& topo = topology();
  std::string s = fmt::format("node {} in_sync={}", spec().name, membership_->in_sync());
  if (membership_->resigning()) s += " resigned=[handing the shard to another member before stopping]";
  if (!membership_->in_sync()) s += fmt::format(" replication=[{}]", replication_->recovery_state());
  // What the failure detector suspects; a suspected primary of this node's shard means the shard takes no writes.
  std::string suspected;
  for (uint16_t n : cluster::other_data_nodes(topo, self_)) {
    if (!membership_->suspected(n)) continue;
    const cluster::NodeSpec& ns = topo.nodes[n];
    const bool primary = membership_->primary(static_cast<uint32_t>(ns.shard)) == n;
    suspected += fmt::format("{}{}{}", suspected.empty() ? "" : ", ", ns.name,
                             primary ? fmt::format(" (primary of shard {})", ns.shard) : "");
    if (primary && ns.shard == spec().shard)
      s += fmt::format(
          " shard {} has no primary: {} does not answer heartbeats (a backup takes over once a majority "
          "of the data nodes agrees)",
          ns.shard, ns.name);
  }
  if (!suspected.empty()) s += fmt::format(" suspected=[{}]", suspected);
  if (std::string why = topology_refusal(); !why.empty()) s += fmt::format(" topology_refused=[{}]", why);
  for (size_t i = 0; i < workers_.size(); ++i) {
    WorkerSnapshot w = workers_[i]->snapshot();
    s += fmt::format(" worker{}_peers_up={}", i, w.peers_up);
    if (!w.peers_up) s += fmt::format(" worker{}_waiting_for=[{}]", i, w.peers_waiting);
  }
  return s + "\n";
}

void Node::register_metrics() {
  metrics_.add([this](metrics::Writer& w) {
    const cluster::Topology& topo = topology();
    metrics::Labels base{{"cluster", topo.cluster}, {"node", spec().name}};
    w.gauge("rdx_ready", "1 when the node serves (in sync and connected to every primary).", ready() ? 1 : 0, base);
    w.gauge("rdx_in_sync", "1 when this node's copy of its shard is complete.", membership_->in_sync() ? 1 : 0, base);
    w.gauge("rdx_epoch", "The topology epoch this node runs (a membership epoch is applied without a restart).",
            topo.epoch, base);
    w.gauge("rdx_topology_refused",
            "1 when the topology file holds an epoch this node did not apply (it changes what needs a restart, or "
            "is invalid; /readyz says why).",
            topology_refusal().empty() ? 0 : 1, base);
    if (spec().role == cluster::Role::kData) {
      const cluster::ShardView v = membership_->view(static_cast<uint32_t>(spec().shard));
      w.gauge("rdx_shard_view", "The view of this node's shard (one more per failover).", static_cast<double>(v.view),
              base);
      w.gauge("rdx_primary", "1 when this node is its shard's primary.", is_primary() ? 1 : 0, base);
      w.gauge("rdx_primary_authority",
              "1 when this node holds leases from a majority of the data nodes (a primary serves only then).",
              membership_->leases().authority(std::chrono::steady_clock::now()) ? 1 : 0, base);
      w.counter("rdx_promotions_total", "Times this node was elected its shard's primary.",
                static_cast<double>(membership_->promotions()), base);
    }
    store::TableStats ts = table_->stats();
    w.gauge("rdx_store_keys", "Keys stored on this node.", static_cast<double>(ts.keys), base);
    w.gauge("rdx_store_arena_used_bytes", "Arena bytes in use.", static_cast<double>(ts.arena_used), base);
    w.gauge("rdx_store_arena_bytes", "Arena size.", static_cast<double>(ts.arena_size), base);
    w.counter("rdx_store_resizes_total", "Index growths.", static_cast<double>(ts.resizes), base);
    for (size_t n = 0; n < topo.nodes.size(); ++n) {
      if (n == self_ || topo.nodes[n].shard != spec().shard) continue;
      metrics::Labels l = base;
      l.emplace_back("replica", topo.nodes[n].name);
      w.gauge("rdx_replica_excluded", "1 if this node excluded the replica (unreachable, so it missed writes).",
              membership_->member(static_cast<uint16_t>(n)) == cluster::MemberState::kFailed ? 1 : 0, l);
    }
    const cluster::Leases& leases = membership_->leases();
    w.gauge("rdx_read_lease_held",
            "1 when this node holds a lease from every other data node (a backup reads its own copy only then).",
            leases.held(std::chrono::steady_clock::now()) ? 1 : 0, base);
    for (uint16_t n : cluster::other_data_nodes(topo, self_)) {
      metrics::Labels l = base;
      l.emplace_back("peer", topo.nodes[n].name);
      w.counter("rdx_failure_suspicions_total",
                "Times the failure detector suspected the peer (silent for the timeout).",
                static_cast<double>(membership_->suspicions(n)), l);
      w.gauge("rdx_peer_suspected", "1 while the failure detector suspects the peer.",
              membership_->suspected(n) ? 1 : 0, l);
    }
    static const char* kOps[WorkerSnapshot::kOpKinds] = {"get", "put", "del", "write"};
    Histogram lat[WorkerSnapshot::kOpKinds];
    for (size_t i = 0; i < workers_.size(); ++i) {
      WorkerSnapshot s = workers_[i]->snapshot();
      metrics::Labels l = base;
      l.emplace_back("worker", std::to_string(i));
      l.emplace_back("transport", topo.transport);
      const auto& t = s.transport;
      w.counter("rdx_transport_packets_sent_total", "Packets sent.", static_cast<double>(t.packets_sent), l);
      w.counter("rdx_transport_packets_received_total", "Packets received.", static_cast<double>(t.packets_received),
                l);
      w.counter("rdx_transport_bytes_sent_total", "Bytes sent.", static_cast<double>(t.bytes_sent), l);
      w.counter("rdx_transport_doorbells_total", "Doorbells (flushes that posted work).",
                static_cast<double>(t.doorbells), l);
      w.counter("rdx_transport_onesided_issued_total", "One-sided operations issued.",
                static_cast<double>(t.onesided_issued), l);
      w.counter("rdx_transport_onesided_emulated_total",
                "One-sided operations from peers executed by this node's CPU (tcp transport emulation).",
                static_cast<double>(t.onesided_served), l);
      w.counter("rdx_transport_rejected_messages_total", "Malformed or oversized frames rejected.",
                static_cast<double>(t.rejected_messages), l);
      w.counter("rdx_transport_connection_failures_total", "Connections that failed or were lost.",
                static_cast<double>(t.conn_failures), l);
      const auto& r = s.rpc;
      w.counter("rdx_rpc_messages_sent_total", "RPC messages sent.", static_cast<double>(r.messages_sent), l);
      w.counter("rdx_rpc_packets_sent_total", "RPC packets (batches) sent.", static_cast<double>(r.packets_sent), l);
      w.counter("rdx_rpc_bad_packets_total", "Malformed RPC packets dropped.", static_cast<double>(r.bad_packets), l);
      w.counter("rdx_rpc_ack_ranges_total", "Smart acks sent (each covers a range of ids).",
                static_cast<double>(r.ack_ranges_sent), l);
      w.counter("rdx_rpc_acks_covered_total", "Ids acknowledged by smart acks.", static_cast<double>(r.acks_covered),
                l);
      w.counter("rdx_rpc_calls_timed_out_total", "Calls that timed out.", static_cast<double>(r.calls_timed_out), l);
      for (int op = 0; op < WorkerSnapshot::kOpKinds; ++op) {
        metrics::Labels lo = base;
        lo.emplace_back("worker", std::to_string(i));
        lo.emplace_back("op", kOps[op]);
        w.counter("rdx_ops_total", "Client operations served.", static_cast<double>(s.ops[op]), lo);
        w.counter("rdx_op_errors_total", "Client operations that failed.", static_cast<double>(s.op_errors[op]), lo);
        lat[op].merge(s.latency[op]);
      }
    }
    for (int op = 0; op < WorkerSnapshot::kOpKinds; ++op) {
      metrics::Labels lo = base;
      lo.emplace_back("op", kOps[op]);
      w.histogram_ns("rdx_op_latency_seconds", "Server-side latency of client operations.", lat[op], lo);
    }
  });
}

}  // namespace rdx::server
