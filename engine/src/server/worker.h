#pragma once
// A worker thread: one transport endpoint, one RPC layer, one coroutine scheduler, one store session, one instance
// of the cluster's replication protocol and (when the topology names one) of its transaction protocol, and the
// node's services. Worker i talks to worker i of every other node (outgoing connections it keeps up, reconnecting
// with back-off) and serves clients connected to it.
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cluster/failure_detector.h"
#include "cluster/worker_context.h"
#include "common/histogram.h"
#include "common/net.h"
#include "replication/replication.h"
#include "rpc/rpc.h"
#include "server/address_relay.h"
#include "server/service.h"
#include "txn/service.h"

namespace rdx::server {

class Node;

// Counters a worker publishes for metrics (copied under a mutex every ~100 ms; never read from the hot path).
struct WorkerSnapshot {
  transport::EndpointStats transport;
  rpc::RpcStats rpc;
  static constexpr int kOpKinds = 4;  // get, put, del, write (a read-modify-write) of the native client API
  uint64_t ops[kOpKinds] = {};
  uint64_t op_errors[kOpKinds] = {};
  Histogram latency[kOpKinds];  // server-side latency of client ops, ns
  uint64_t inflight = 0;
  bool peers_up = false;      // connected to every node it needs (readiness)
  std::string peers_waiting;  // when not: which peers and why ("n1 (cannot resolve 'n1': ...)"), for /readyz
};

class Worker final : public cluster::WorkerContext {
 public:
  Worker(Node& node, uint16_t index);
  ~Worker() override;

  // Starts the thread; returns once the endpoint exists (or failed to be created).
  Status start();
  void request_stop();
  void join();
  WorkerSnapshot snapshot() const;

  // cluster::WorkerContext
  rpc::Rpc& rpc() override { return *rpc_; }
  rpc::Scheduler& sched() override { return sched_; }
  store::HashTable& table() override;
  store::Session& session() override { return *session_; }
  const cluster::Topology& topology() const override;
  uint16_t self() const override;
  uint16_t worker_index() const override { return index_; }
  std::optional<transport::ConnId> peer(uint16_t node) const override;
  cluster::Membership& membership() override;
  cluster::LocalReads& local_reads() override { return *local_reads_; }
  uint64_t next_writer_id() override;

 private:
  struct Peer {
    std::optional<transport::ConnId> conn;
    bool up = false;
    std::chrono::steady_clock::time_point next_attempt{};
    std::chrono::milliseconds backoff{50};
    uint32_t failed_attempts = 0;  // since it was last up
    std::string last_error;
  };
  enum OpIndex { kGetOp = 0, kPutOp = 1, kDelOp = 2, kWriteOp = 3 };

  void run();
  Status init_in_thread();
  void connect_peers();
  void adopt_topology();
  void hand_topology_to(uint16_t node);
  rpc::Task<void> fetch_topology_from(uint16_t node);
  void offer_topology_from(uint32_t from, std::string text);
  void on_conn_event(const transport::Completion& c);
  void note_connect_failure(uint16_t node, std::string why);
  Status register_client_api();
  // Whether a client request may proceed; else it was refused (kInvalidArgument with `malformed`, or shutting down).
  bool admit_client(const rpc::Incoming& in, OpIndex op, const char* malformed);
  rpc::Task<void> serve_client(rpc::ReplyTo to, OpIndex op, std::string key, std::string value);
  rpc::Task<void> serve_client_write(rpc::ReplyTo to, std::string key, replication::Rmw op);
  void count_client_op(OpIndex op, Code status, std::chrono::steady_clock::time_point t0);
  size_t poll_once();
  void publish();
  void wait_for_work();
  bool needs_peer(uint16_t node) const;

  Node& node_;
  uint16_t index_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  net::UniqueFd wake_;
  Status init_status_;
  std::atomic<bool> init_done_{false};
  uint32_t writer_seq_ = 0;

  std::unique_ptr<transport::Endpoint> ep_;
  rpc::Scheduler sched_;
  std::unique_ptr<rpc::Rpc> rpc_;
  std::optional<store::Session> session_;
  std::unique_ptr<cluster::LocalReads> local_reads_;
  std::unique_ptr<replication::ReplicationProtocol> replication_;
  std::unique_ptr<cluster::FailureDetector> failure_detector_;
  std::optional<AddressRelay> address_relay_;
  std::unique_ptr<txn::TxnServiceImpl> txn_;
  std::optional<ServiceEnv> service_env_;  // services may keep a reference: it lives as long as they do
  std::vector<std::unique_ptr<Service>> services_;
  std::vector<Peer> peers_;  // by node id
  uint64_t membership_gen_ = 0;
  const cluster::Topology* topology_;  // the epoch this worker runs (Node::topology is the newest)
  std::unordered_map<uint16_t, std::chrono::steady_clock::time_point> last_handed_;   // hand_topology_to, per peer
  std::unordered_map<uint16_t, std::chrono::steady_clock::time_point> last_fetched_;  // fetch_topology_from
  bool warned_large_topology_ = false;

  WorkerSnapshot live_;  // owned by the worker thread
  mutable std::mutex snap_mu_;
  WorkerSnapshot published_;
};

}  // namespace rdx::server
