#pragma once
// One rdxd process: the topology, the transport, the store (one arena, registered for one-sided access), the worker
// threads, the HTTP endpoint (/metrics, /healthz, /readyz) and the node-wide shared state.
#include <memory>
#include <string>
#include <vector>

#include "common/memory.h"
#include "metrics/metrics.h"
#include "server/frontend.h"
#include "server/http.h"
#include "server/node_shared.h"
#include "server/protocol.h"
#include "server/topology.h"
#include "store/hashtable.h"
#include "transport/transport.h"
#include "txn/service.h"

namespace rdx::server {

class Worker;

struct NodeOptions {
  std::string node_name;  // which topology entry is this process
  std::string listen_host = "0.0.0.0";
  std::string http_host = "0.0.0.0";
  bool busy_poll = false;  // workers never block (lowest latency, burns a core each)
};

inline constexpr transport::RegionId kStoreRegion = 1;

class Node {
 public:
  static Result<std::unique_ptr<Node>> create(Topology topo, NodeOptions opts);
  ~Node();

  Status start();
  // Graceful: stop taking client requests, let in-flight ones finish (bounded), stop workers and HTTP.
  void stop();
  bool ready() const;
  std::string readiness_detail() const;

  const Topology& topology() const { return topo_; }
  uint16_t self() const { return self_; }
  const NodeSpec& spec() const { return topo_.nodes[self_]; }
  transport::Transport& transport() { return *transport_; }
  store::HashTable& table() { return *table_; }
  NodeShared& shared() { return *shared_; }
  const NodeOptions& options() const { return opts_; }
  const ProtocolFactory& protocol_factory() const { return protocol_factory_; }
  const txn::TxnConfig& txn_config() const { return txn_config_; }
  metrics::Registry& metrics() { return metrics_; }
  uint16_t http_port() const { return http_.port(); }

  // The Redis endpoint: set before start(); every worker then serves it on the node's redis_port.
  void set_frontend_factory(FrontendFactory f) { frontend_factory_ = std::move(f); }
  const FrontendFactory& frontend_factory() const { return frontend_factory_; }
  const std::string& password() const { return password_; }
  std::string info_text() const;

  // A worker lost its connection to `node` (failure detection input for the replication protocol).
  void on_peer_lost(uint16_t node);

 private:
  Node(Topology topo, NodeOptions opts, uint16_t self);
  void register_metrics();
  Status load_password();

  Topology topo_;
  NodeOptions opts_;
  uint16_t self_;
  std::unique_ptr<NodeShared> shared_;
  ProtocolFactory protocol_factory_;
  txn::TxnConfig txn_config_;
  FrontendFactory frontend_factory_;
  std::string password_;
  MemoryBlock arena_;
  std::unique_ptr<store::HashTable> table_;
  std::unique_ptr<transport::Transport> transport_;
  std::vector<std::unique_ptr<Worker>> workers_;
  metrics::Registry metrics_;
  HttpServer http_;
  bool started_ = false;
};

}  // namespace rdx::server
