#pragma once
// The Redis-protocol endpoint of rdxd (RESP2/RESP3). Each worker runs one instance on the node's redis_port
// (SO_REUSEPORT: the kernel spreads connections over the workers); the worker polls it every loop iteration, so
// client I/O, command execution and the cluster's network share one thread. Wire it with
//   node->add_service(rdx::resp::make_resp_service);
#include <memory>

#include "common/status.h"
#include "server/service.h"

namespace rdx::resp {

// A node without a Redis port (redis_port 0) gets none.
Result<std::unique_ptr<server::Service>> make_resp_service(server::ServiceEnv& env);

}  // namespace rdx::resp
