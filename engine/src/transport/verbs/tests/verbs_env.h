#pragma once
// Where the verbs tests and tools run: the RDMA address from $RDX_VERBS_ADDR, else the IPv4 address of the first
// usable RDMA port (sysfs). Empty address = no RDMA here; `why_not` says why.
#include <string>

#include "transport/transport.h"

namespace rdx::transport::verbs {

struct VerbsEnv {
  std::string addr;     // IPv4 of the RDMA interface
  std::string why_not;  // set when addr is empty
};
const VerbsEnv& verbs_env();

// A verbs config for `node` listening on the RDMA address (port chosen by the system).
TransportConfig verbs_test_config(NodeId node, uint16_t workers);
PeerAddr verbs_peer(NodeId node, uint16_t port);

}  // namespace rdx::transport::verbs
