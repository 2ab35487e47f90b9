#include "transport/verbs/tests/verbs_env.h"

#include <cstdlib>

#include "transport/verbs/rdma_sysfs.h"
#include "transport/verbs/verbs_transport.h"

namespace rdx::transport::verbs {

const VerbsEnv& verbs_env() {
  static const VerbsEnv env = [] {
    VerbsEnv e;
    if (!verbs_devices_present(&e.why_not)) return e;
    if (const char* a = std::getenv("RDX_VERBS_ADDR"); a != nullptr && *a != '\0') {
      e.addr = a;
      return e;
    }
    auto port = first_usable_port(&e.why_not);
    if (port && !port->ipv4.empty())
      e.addr = port->ipv4;
    else if (e.why_not.empty())
      e.why_not = "the RDMA port has no IPv4 address (set RDX_VERBS_ADDR)";
    return e;
  }();
  return env;
}

TransportConfig verbs_test_config(NodeId node, uint16_t workers) {
  TransportConfig c;
  c.kind = "verbs";
  c.node = node;
  c.listen_host = verbs_env().addr;
  c.rdma_addr = verbs_env().addr;
  c.listen_port = 0;
  c.workers = workers;
  return c;
}

PeerAddr verbs_peer(NodeId node, uint16_t port) { return PeerAddr{node, verbs_env().addr, port, verbs_env().addr}; }

}  // namespace rdx::transport::verbs
