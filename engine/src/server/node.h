#pragma once
// One rdxd process: the topology, the transport, the store (one arena, registered for one-sided access), the node's
// membership view, the node-wide part of its replication protocol, the worker threads (each with the protocols'
// per-worker parts and the services main() plugged in) and the HTTP endpoint (/metrics, /healthz, /readyz).
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cluster/membership.h"
#include "cluster/topology.h"
#include "common/memory.h"
#include "metrics/metrics.h"
#include "replication/replication.h"
#include "server/http.h"
#include "server/service.h"
#include "store/hashtable.h"
#include "transport/transport.h"
#include "txn/cc.h"

namespace rdx::server {

class Worker;

struct NodeOptions {
  std::string node_name;                // which topology entry is this process
  std::string test_partition_peer;      // tests: the node toggle_test_partition() cuts this node off from
  bool test_partition_one_way = false;  // tests: only this node's own links to it are cut (its requests answered)
  std::string listen_host = "0.0.0.0";
  std::string http_host = "0.0.0.0";
  bool busy_poll = false;          // workers never block (lowest latency, burns a core each)
  replication::TestFaults faults;  // tests only
  txn::TxnTestFaults txn_faults;   // tests only
};

class Node {
 public:
  // Checks the topology against what this build implements (protocols, primitives) and fails with a message naming
  // what exists.
  static Result<std::unique_ptr<Node>> create(cluster::Topology topo, NodeOptions opts);
  ~Node();

  // Before start(): a service every worker hosts (the Redis endpoint, the benchmark service).
  void add_service(ServiceFactory f) { services_.push_back(std::move(f)); }
  Status start();
  // Graceful: stop taking client requests, let in-flight ones finish (bounded), stop workers and HTTP.
  void stop();
  // Before stop(): a primary has another member of its shard elected (replication/primary_backup/handover.cc), so
  // its shard is without a primary for an election's round trips rather than a lease and a failure detection.
  // Returns once that is done, there was nothing to hand over, or `limit` passed; whether another member leads.
  bool hand_over(std::chrono::milliseconds limit);
  bool ready() const;
  // Whether this node is its shard's primary in its current view.
  bool is_primary() const;
  std::string readiness_detail() const;

  // The topology of the newest epoch this node applied. Every epoch's topology lives as long as the node, so a
  // reference stays valid (workers adopt a new one on their next tick; coroutines may hold an older one).
  const cluster::Topology& topology() const { return *topology_.load(std::memory_order_acquire); }
  // Applies a newer epoch of the topology without restarting (cluster/topology_change.h): new data nodes are
  // excluded until they join; a removed one is cut off once the leases this node granted it have ended (this call
  // waits for that, up to a lease). Returns whether this node itself was removed (the caller stops it); an error
  // when the epoch cannot be applied live (nothing changes then).
  // `text` is the file `next` was read from (handed to peers that run an older epoch).
  Result<bool> apply_topology(const cluster::Topology& next, std::string text);
  // The file's text of the running epoch; before start(), the one the node was created from.
  void set_topology_text(std::string text) {
    with_follower_state([&](FollowerState& f) { f.text = std::move(text); });
  }
  std::string topology_text() const { return follower_state().text; }
  // A newer epoch's text a peer handed this node; the newest offer is kept (TopologyFollower takes it).
  void offer_topology(std::string text, uint32_t epoch) {
    with_follower_state([&](FollowerState& f) {
      if (!f.offered.empty() && epoch <= f.offered_epoch) return;
      f.offered = std::move(text);
      f.offered_epoch = epoch;
    });
  }
  std::string take_offered_topology() {
    std::string out;
    with_follower_state([&](FollowerState& f) { out = std::exchange(f.offered, {}); });
    return out;
  }
  // Why the newest topology text was not applied ("" when it was): /readyz and the rdx_topology_refused metric.
  void set_topology_refusal(std::string why) {
    with_follower_state([&](FollowerState& f) { f.refusal = std::move(why); });
  }
  std::string topology_refusal() const { return follower_state().refusal; }
  uint16_t self() const { return self_; }
  const cluster::NodeSpec& spec() const { return topology().nodes[self_]; }
  transport::Transport& transport() { return *transport_; }
  store::HashTable& table() { return *table_; }
  cluster::Membership& membership() { return *membership_; }
  replication::ReplicationNode& replication() { return *replication_; }
  // The transaction protocol, or null when the topology runs none.
  const txn::CcEntry* cc() const { return cc_; }
  const txn::Primitives& primitives() const { return primitives_; }
  const txn::TxnOptions& txn_options() const { return txn_options_; }
  const std::vector<ServiceFactory>& service_factories() const { return services_; }
  const NodeOptions& options() const { return opts_; }
  // Tests (rdxd --test-partition): cuts this node off from options().test_partition_peer, or heals the cut: no
  // message goes to it (WorkerContext::peer says it is unreachable) and every message from it is dropped (one way:
  // none is dropped, and its requests are answered on its own connections).
  void toggle_test_partition();
  const std::atomic<int32_t>& partitioned_from() const { return partitioned_from_; }
  const std::string& password() const { return password_; }
  std::string info_text() const;
  metrics::Registry& metrics() { return metrics_; }
  uint16_t http_port() const { return http_.port(); }

 private:
  Node(cluster::Topology topo, NodeOptions opts, uint16_t self);
  void register_metrics();
  Status load_password();

  // Every epoch applied, oldest first (the last is the current one, also in topology_).
  std::vector<std::unique_ptr<const cluster::Topology>> epochs_;
  std::atomic<const cluster::Topology*> topology_{nullptr};
  std::mutex apply_mu_;  // one apply_topology at a time
  // What the topology follower and the workers share (under follower_mu_).
  struct FollowerState {
    std::string text;     // the running epoch's file
    std::string offered;  // a newer one a peer handed over, not taken yet
    uint32_t offered_epoch = 0;
    std::string refusal;
  };
  template <typename F>
  void with_follower_state(F&& f) {
    std::lock_guard<std::mutex> lk(follower_mu_);
    f(follower_);
  }
  FollowerState follower_state() const {
    std::lock_guard<std::mutex> lk(follower_mu_);
    return follower_;
  }
  mutable std::mutex follower_mu_;
  FollowerState follower_;
  NodeOptions opts_;
  std::atomic<int32_t> partitioned_from_{-1};
  uint16_t self_;
  std::unique_ptr<cluster::Membership> membership_;
  const replication::ReplicationEntry* replication_entry_ = nullptr;
  std::unique_ptr<replication::ReplicationNode> replication_;
  const txn::CcEntry* cc_ = nullptr;
  txn::Primitives primitives_;
  txn::TxnOptions txn_options_;
  std::vector<ServiceFactory> services_;
  std::string password_;
  MemoryBlock arena_;
  std::unique_ptr<store::HashTable> table_;
  std::unique_ptr<transport::Transport> transport_;
  std::vector<std::unique_ptr<Worker>> workers_;
  metrics::Registry metrics_;
  HttpServer http_;
  bool started_ = false;
};

// A named message range (cluster/msg_ids.h), for the overlap check.
struct NamedRange {
  std::string name;
  rpc::MsgRange range;
};
// Every message range of this build: the services' and each registered protocol's (which must lie inside its
// family's block, else kInternal naming it).
Result<std::vector<NamedRange>> message_ranges();
// kInternal naming the first two ranges that overlap.
Status check_disjoint(const std::vector<NamedRange>& ranges);
// The transaction protocol the topology names (null: txn.protocol "none") and its primitives. Families and keys: a
// transaction protocol replicates through the replication protocol's replica log, which only protocols registered
// as carrying transactions offer; kUnsupported otherwise.
Result<const txn::CcEntry*> transaction_protocol(const cluster::Topology& topo,
                                                 const replication::ReplicationEntry& rep, txn::Primitives* prims);

}  // namespace rdx::server
