// The backend-independent transport suite (transport/tests/conformance.cc) on the verbs backend. Without an RDMA
// device every case skips with the reason.
#include "transport/tests/conformance.h"
#include "transport/verbs/tests/verbs_env.h"

namespace rdx::transport::testing {
namespace {

BackendParam verbs_param() {
  BackendParam p;
  p.name = "verbs";
  p.config = [](NodeId node, uint16_t workers) {
    TransportConfig c = verbs::verbs_test_config(node, workers);
    c.hugepages = false;
    return c;
  };
  p.unavailable_reason = [] {
    const auto& env = verbs::verbs_env();
    return env.addr.empty() ? "no usable RDMA device: " + env.why_not : std::string();
  };
  p.peer_addr = [](NodeId node, uint16_t port) { return verbs::verbs_peer(node, port); };
  return p;
}

INSTANTIATE_TEST_SUITE_P(Verbs, TransportConformance, ::testing::Values(verbs_param()), param_name);

}  // namespace
}  // namespace rdx::transport::testing
