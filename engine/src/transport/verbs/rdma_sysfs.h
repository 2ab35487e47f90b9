#pragma once
// What the kernel says about RDMA devices, read from sysfs (/sys/class/infiniband): ports, their state and link layer,
// and the GID table with each entry's type. Used to pick the GID index (RoCE v2 + IPv4-mapped on Ethernet, the port
// GID on InfiniBand) instead of hard-coding one, and to explain why verbs cannot run on a machine.
// The root directory is a parameter so tests can run the logic on a fabricated tree.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace rdx::transport::verbs {

inline constexpr const char* kSysfsInfiniband = "/sys/class/infiniband";

using Gid = std::array<uint8_t, 16>;

struct GidEntry {
  int index = 0;
  Gid gid{};
  std::string type;  // "RoCE v2", "IB/RoCE v1", ...
  std::string ndev;  // netdev the GID belongs to (RoCE), empty on IB
};

struct PortInfo {
  std::string device;
  int port = 1;
  bool active = false;         // state "4: ACTIVE"
  std::string link_layer;      // "Ethernet" or "InfiniBand"
  std::vector<GidEntry> gids;  // non-zero entries only
};

// Parses "fe80:0000:...:0001" (8 groups of 4 hex digits) into 16 bytes.
std::optional<Gid> parse_gid(const std::string& text);
// The IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d) in dotted form, or empty.
std::string gid_ipv4(const Gid& gid);
// ::ffff:a.b.c.d for a dotted IPv4 address; nullopt for anything else.
std::optional<Gid> ipv4_mapped_gid(const std::string& ipv4);

// Every port of every device under `root`.
std::vector<PortInfo> list_ports(const std::string& root = kSysfsInfiniband);
Result<PortInfo> read_port(const std::string& device, int port, const std::string& root = kSysfsInfiniband);

// The GID index the verbs backend uses for `ipv4` (may be empty on InfiniBand) on a port:
// Ethernet (RoCE, rxe): the RoCE v2 entry whose GID is ::ffff:<ipv4>; with `ipv4` empty, the first RoCE v2 IPv4-mapped
// entry. InfiniBand: index 0 (the port GID). Fails with a message that names what is missing.
Result<int> detect_gid_index(const PortInfo& port, const std::string& ipv4);

// The first active port with a usable GID (RoCE v2 IPv4-mapped on Ethernet): what tests and tools run on when no
// address is configured. `why_not` explains a failure (no devices, no active port, no IPv4 RoCE v2 GID).
struct UsablePort {
  PortInfo port;
  int gid_index = 0;
  std::string ipv4;  // from the GID (Ethernet); empty on InfiniBand
};
std::optional<UsablePort> first_usable_port(std::string* why_not, const std::string& root = kSysfsInfiniband);

}  // namespace rdx::transport::verbs
