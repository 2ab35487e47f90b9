#pragma once
// A service a node hosts in every worker thread, beside the protocols: the Redis endpoint (resp/), the benchmark
// service (bench/). rdxd's main() plugs them in (Node::add_service); the node's core knows none of them. The
// worker calls poll() every loop iteration and adds wait_fd() to the fds it blocks on, so a service's client I/O,
// its coroutines and the cluster's network share one thread and one batch cycle (no hand-off between threads).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cluster/worker_context.h"
#include "common/status.h"
#include "replication/replication.h"
#include "txn/service.h"

namespace rdx::server {

struct ServiceEnv {
  cluster::WorkerContext& ctx;
  replication::ReplicationProtocol& replication;  // single-key operations
  txn::TxnServiceImpl* txn;                       // transactions; null when the cluster runs no transaction protocol
  std::string listen_host;
  uint16_t redis_port;                // 0: the node serves no Redis endpoint
  std::string password;               // empty: no AUTH required
  std::function<std::string()> info;  // INFO text of the node (sections "# Server", "# Keyspace", ...)
};

class Service {
 public:
  virtual ~Service() = default;
  // Accepts, reads, executes and writes without blocking. Returns how much work was done (0 = idle).
  virtual size_t poll() { return 0; }
  // Readable when poll() has work; -1 if the service has nothing to wait on.
  virtual int wait_fd() const { return -1; }
  // Graceful stop: close listeners, finish what is in flight (inflight() reaches 0), then close connections.
  virtual void stop_accepting() {}
  virtual size_t inflight() const { return 0; }
};

// Called on each worker thread when it starts; a service that does not apply to this node returns nullptr. `env`
// outlives the service.
using ServiceFactory = std::function<Result<std::unique_ptr<Service>>(ServiceEnv& env)>;

}  // namespace rdx::server
