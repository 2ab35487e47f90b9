#pragma once
// verbs backend of the transport (rdma-core: InfiniBand, RoCEv2, soft-RoCE/rxe). See transport/transport.h for the
// contract; verbs/verbs_transport_impl.h for how it is built.
#include <memory>
#include <string>

#include "transport/transport.h"

namespace rdx::transport::verbs {

// kUnavailable when no usable RDMA device/address is found (with the reason), kInvalidArgument on a bad config.
Result<std::unique_ptr<Transport>> make_verbs_transport(const TransportConfig& cfg);

// True when this machine has an active RDMA port with a usable GID (RoCE v2 IPv4-mapped on Ethernet) and the
// uverbs/rdma_cm character devices are accessible. Otherwise `why_not` (if given) says what is missing.
bool verbs_devices_present(std::string* why_not);

}  // namespace rdx::transport::verbs
