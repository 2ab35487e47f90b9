#pragma once
// Backend-independent transport semantics. A backend's test file instantiates TransportConformance with a
// BackendParam; every backend must pass the same suite (identical semantics is the contract of transport.h).
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "transport/transport.h"

namespace rdx::transport::testing {

struct BackendParam {
  std::string name;
  // Config for node `node` with `workers` endpoints, listening on a loopback/RDMA address with a free port.
  std::function<TransportConfig(NodeId node, uint16_t workers)> config;
  // Empty string if the backend can run here; otherwise why not (the suite then skips with that reason).
  std::function<std::string()> unavailable_reason;
  // Address peers use to reach a node created from config() (host, rdma address).
  std::function<PeerAddr(NodeId node, uint16_t port)> peer_addr;
};

class TransportConformance : public ::testing::TestWithParam<BackendParam> {};

inline void PrintTo(const BackendParam& p, std::ostream* os) { *os << p.name; }

inline std::string param_name(const ::testing::TestParamInfo<BackendParam>& info) { return info.param.name; }

}  // namespace rdx::transport::testing
