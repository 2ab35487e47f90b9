#pragma once
// A client-facing front end (the Redis-protocol endpoint) served inside a worker thread: the worker calls poll()
// every loop iteration and adds wait_fd() to the fds it blocks on, so client I/O, protocol work and the network
// share one thread and one batch cycle (no hand-off between threads).
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"

namespace rdx::txn {
class TxnService;
}

namespace rdx::server {

class WorkerContext;
class Protocol;

struct FrontendEnv {
  WorkerContext& ctx;
  Protocol& protocol;    // single-key operations (GET/SET/DEL)
  txn::TxnService* txn;  // transactions (MULTI/EXEC/WATCH, INCR); null until the node runs a txn protocol
  std::string listen_host;
  uint16_t port;                      // every worker binds it with SO_REUSEPORT; the kernel spreads connections
  std::string password;               // empty: no AUTH required
  std::function<std::string()> info;  // INFO text of the node (sections "# Server", "# Keyspace", ...)
};

class Frontend {
 public:
  virtual ~Frontend() = default;
  // Accepts, reads, executes and writes without blocking. Returns how much work was done (0 = idle).
  virtual size_t poll() = 0;
  // Readable when poll() has work; -1 if the front end has nothing to wait on.
  virtual int wait_fd() const = 0;
  // Graceful stop: close the listener, finish commands in flight, then close connections.
  virtual void stop_accepting() = 0;
  virtual size_t inflight() const = 0;
};

using FrontendFactory = std::function<Result<std::unique_ptr<Frontend>>(FrontendEnv env)>;

}  // namespace rdx::server
