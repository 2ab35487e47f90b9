#pragma once
// The Redis-protocol endpoint of rdxd (RESP2/RESP3). Each worker runs one instance on the node's redis_port
// (SO_REUSEPORT: the kernel spreads connections over the workers); the worker polls it every loop iteration, so
// client I/O, command execution and the cluster's network share one thread. Wire it with
//   node->set_frontend_factory(rdx::resp::make_resp_frontend);
#include <memory>

#include "common/status.h"
#include "server/frontend.h"

namespace rdx::resp {

Result<std::unique_ptr<server::Frontend>> make_resp_frontend(server::FrontendEnv env);

}  // namespace rdx::resp
