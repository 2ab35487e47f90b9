#include "transport/verbs/device.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include "transport/verbs/rdma_sysfs.h"

namespace rdx::transport::verbs {

Device::~Device() {
  if (pd != nullptr) ibv_dealloc_pd(pd);
}

Result<ibv_mr*> Device::register_memory(void* base, size_t len) const {
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
  if (atomics) access |= IBV_ACCESS_REMOTE_ATOMIC;
  ibv_mr* mr = ibv_reg_mr(pd, base, len, access);
  if (mr == nullptr) {
    int e = errno;
    return error(e == ENOMEM ? Code::kResourceExhausted : Code::kInternal, "ibv_reg_mr of {} bytes on {}: {}{}", len,
                 name, strerror(e),
                 e == ENOMEM ? " (locked-memory limit too low? raise `ulimit -l` or grant IPC_LOCK)" : "");
  }
  return mr;
}

Result<std::string> interface_ipv4(const std::string& ifname) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return error(Code::kInternal, "getifaddrs: {}", strerror(errno));
  std::string ip;
  bool exists = false;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_name == nullptr || ifname != a->ifa_name) continue;
    exists = true;
    if (a->ifa_addr != nullptr && a->ifa_addr->sa_family == AF_INET) {
      char buf[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof(buf));
      ip = buf;
      break;
    }
  }
  freeifaddrs(list);
  if (!exists) return error(Code::kNotFound, "RDMA interface '{}' does not exist", ifname);
  if (ip.empty()) return error(Code::kNotFound, "RDMA interface '{}' has no IPv4 address", ifname);
  return ip;
}

namespace {

// Resolves a host name or literal to one IPv4 address.
Result<std::string> resolve_ipv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr)
    return error(Code::kInvalidArgument, "cannot resolve '{}': {}", host, gai_strerror(rc));
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof(buf));
  freeaddrinfo(res);
  return std::string(buf);
}

Result<std::string> choose_local_ip(const TransportConfig& cfg) {
  if (!cfg.rdma_addr.empty()) return resolve_ipv4(cfg.rdma_addr);
  if (!cfg.rdma_interface.empty()) return interface_ipv4(cfg.rdma_interface);
  if (!cfg.listen_host.empty() && cfg.listen_host != "0.0.0.0") return resolve_ipv4(cfg.listen_host);
  // Nothing configured: the first RoCE v2 IPv4 GID of the named device (or of any device).
  for (const PortInfo& p : list_ports()) {
    if (!cfg.device.empty() && p.device != cfg.device) continue;
    if (!p.active) continue;
    auto idx = detect_gid_index(p, "");
    if (!idx) continue;
    for (const GidEntry& e : p.gids)
      if (e.index == idx.value() && !gid_ipv4(e.gid).empty()) return gid_ipv4(e.gid);
  }
  std::string why;
  first_usable_port(&why);
  return error(Code::kUnavailable, "no RDMA address configured (rdma_addr/rdma_interface) and none found{}: {}",
               cfg.device.empty() ? "" : " on device " + cfg.device, why.empty() ? "no IPv4 RoCE v2 GID" : why);
}

// The device and port rdma_cm associates with `ip` (bind a throw-away id to it).
Status bind_probe(const std::string& ip, ibv_context** ctx, uint8_t* port) {
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP) != 0)
    return error(Code::kUnavailable, "rdma_create_id: {} (is rdma_cm/rdma_ucm loaded?)", strerror(errno));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  inet_pton(AF_INET, ip.c_str(), &sa.sin_addr);
  Status st;
  if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&sa)) != 0) {
    st = error(Code::kUnavailable, "rdma_bind_addr({}): {} (the address is not on an RDMA-capable interface)", ip,
               strerror(errno));
  } else if (id->verbs == nullptr) {
    st = error(Code::kUnavailable, "address {} is not bound to an RDMA device", ip);
  } else {
    *ctx = id->verbs;
    *port = id->port_num;
  }
  rdma_destroy_id(id);
  return st;
}

}  // namespace

Result<std::unique_ptr<Device>> open_device(const TransportConfig& cfg) {
  auto ip = choose_local_ip(cfg);
  if (!ip) return ip.status();
  auto dev = std::make_unique<Device>();
  dev->local_ip = ip.value();
  RDX_RETURN_IF_ERROR(bind_probe(dev->local_ip, &dev->ctx, &dev->port));
  dev->name = ibv_get_device_name(dev->ctx->device);
  if (!cfg.device.empty() && cfg.device != dev->name)
    return error(Code::kInvalidArgument, "RDMA address {} belongs to device {}, but device {} was configured",
                 dev->local_ip, dev->name, cfg.device);
  if (ibv_query_device(dev->ctx, &dev->attr) != 0)
    return error(Code::kInternal, "ibv_query_device({}): {}", dev->name, strerror(errno));
  if (ibv_query_port(dev->ctx, dev->port, &dev->port_attr) != 0)
    return error(Code::kInternal, "ibv_query_port({} port {}): {}", dev->name, dev->port, strerror(errno));
  if (dev->port_attr.state != IBV_PORT_ACTIVE)
    return error(Code::kUnavailable, "{} port {} is {} (need ACTIVE)", dev->name, dev->port,
                 ibv_port_state_str(dev->port_attr.state));
  dev->atomics = dev->attr.atomic_cap != IBV_ATOMIC_NONE;

  auto port = read_port(dev->name, dev->port);
  if (!port) return port.status();
  if (cfg.gid_index >= 0) {
    bool found = false;
    for (const GidEntry& e : port->gids) found |= e.index == cfg.gid_index;
    if (!found)
      return error(Code::kInvalidArgument, "{} port {} has no GID at configured index {}", dev->name, dev->port,
                   cfg.gid_index);
    dev->gid_index = cfg.gid_index;
  } else {
    auto idx = detect_gid_index(port.value(), port->link_layer == "InfiniBand" ? "" : dev->local_ip);
    if (!idx) return idx.status();
    dev->gid_index = idx.value();
  }
  dev->pd = ibv_alloc_pd(dev->ctx);
  if (dev->pd == nullptr) return error(Code::kInternal, "ibv_alloc_pd({}): {}", dev->name, strerror(errno));
  spdlog::info("verbs: device {} port {} ({}, MTU {}), address {}, GID index {}, atomics {}", dev->name, dev->port,
               port->link_layer, 128 << dev->port_attr.active_mtu, dev->local_ip, dev->gid_index,
               dev->atomics ? "yes" : "no");
  return dev;
}

}  // namespace rdx::transport::verbs
