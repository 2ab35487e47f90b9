#pragma once
// The RDMA device one verbs Transport uses: found from the RDMA interface's IP through librdmacm (so the device, port
// and GID are the ones rdma_cm will use for connections), with its protection domain and memory registration.
#include <infiniband/verbs.h>

#include <memory>
#include <string>

#include "common/status.h"
#include "transport/transport.h"

namespace rdx::transport::verbs {

struct Device {
  ibv_context* ctx = nullptr;  // owned by librdmacm (shared with every rdma_cm_id on this device)
  ibv_pd* pd = nullptr;
  uint8_t port = 1;
  std::string name;
  std::string local_ip;  // IPv4 of the RDMA interface: listener and connection source address
  int gid_index = 0;     // detected (or configured and checked) from sysfs
  ibv_device_attr attr{};
  ibv_port_attr port_attr{};
  bool atomics = false;  // device executes RDMA atomics (IBV_ATOMIC_HCA/GLOB)

  ~Device();
  // Registers [base, base+len) for local access and remote READ/WRITE (and atomics when supported).
  Result<ibv_mr*> register_memory(void* base, size_t len) const;
};

// Picks the local RDMA IP from the config (rdma_addr, then rdma_interface, then listen_host, then the device's or the
// machine's first RoCE v2 IPv4 GID), resolves the device and port through rdma_cm, and checks the port is usable.
Result<std::unique_ptr<Device>> open_device(const TransportConfig& cfg);

// IPv4 address of a network interface, or an error naming the interface.
Result<std::string> interface_ipv4(const std::string& ifname);

}  // namespace rdx::transport::verbs
