#include "transport/verbs/rdma_sysfs.h"

#include <arpa/inet.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace rdx::transport::verbs {

namespace fs = std::filesystem;

namespace {

// First line of a sysfs attribute without the newline; nullopt if unreadable (sysfs returns EINVAL for the type of an
// empty GID slot).
std::optional<std::string> read_attr(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

bool is_zero(const Gid& g) {
  return std::all_of(g.begin(), g.end(), [](uint8_t b) { return b == 0; });
}

bool is_ipv4_mapped(const Gid& g) {
  for (int i = 0; i < 10; ++i)
    if (g[i] != 0) return false;
  return g[10] == 0xff && g[11] == 0xff;
}

}  // namespace

std::optional<Gid> parse_gid(const std::string& text) {
  Gid g{};
  size_t pos = 0;
  for (int group = 0; group < 8; ++group) {
    if (group > 0) {
      if (pos >= text.size() || text[pos] != ':') return std::nullopt;
      ++pos;
    }
    unsigned v = 0;
    for (int d = 0; d < 4; ++d, ++pos) {
      if (pos >= text.size()) return std::nullopt;
      char c = text[pos];
      int x = (c >= '0' && c <= '9')   ? c - '0'
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10
              : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                       : -1;
      if (x < 0) return std::nullopt;
      v = v * 16 + static_cast<unsigned>(x);
    }
    g[group * 2] = static_cast<uint8_t>(v >> 8);
    g[group * 2 + 1] = static_cast<uint8_t>(v & 0xff);
  }
  if (pos != text.size()) return std::nullopt;
  return g;
}

std::string gid_ipv4(const Gid& gid) {
  if (!is_ipv4_mapped(gid)) return {};
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, gid.data() + 12, buf, sizeof(buf));
  return buf;
}

std::optional<Gid> ipv4_mapped_gid(const std::string& ipv4) {
  in_addr a{};
  if (inet_pton(AF_INET, ipv4.c_str(), &a) != 1) return std::nullopt;
  Gid g{};
  g[10] = g[11] = 0xff;
  std::memcpy(g.data() + 12, &a, 4);
  return g;
}

Result<PortInfo> read_port(const std::string& device, int port, const std::string& root) {
  fs::path dir = fs::path(root) / device / "ports" / std::to_string(port);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return error(Code::kNotFound, "no RDMA port {}/{} under {}", device, port, root);
  PortInfo info;
  info.device = device;
  info.port = port;
  auto state = read_attr(dir / "state");
  info.active = state && state->find("ACTIVE") != std::string::npos;
  info.link_layer = read_attr(dir / "link_layer").value_or("");
  for (const auto& entry : fs::directory_iterator(dir / "gids", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    auto text = read_attr(entry.path());
    if (!text) continue;
    auto gid = parse_gid(*text);
    if (!gid || is_zero(*gid)) continue;
    GidEntry e;
    e.index = std::stoi(name);
    e.gid = *gid;
    e.type = read_attr(dir / "gid_attrs" / "types" / name).value_or("");
    e.ndev = read_attr(dir / "gid_attrs" / "ndevs" / name).value_or("");
    info.gids.push_back(std::move(e));
  }
  std::sort(info.gids.begin(), info.gids.end(), [](const GidEntry& a, const GidEntry& b) { return a.index < b.index; });
  return info;
}

std::vector<PortInfo> list_ports(const std::string& root) {
  std::vector<PortInfo> out;
  std::error_code ec;
  std::vector<std::string> devices;
  for (const auto& dev : fs::directory_iterator(root, ec)) devices.push_back(dev.path().filename().string());
  std::sort(devices.begin(), devices.end());
  for (const auto& dev : devices) {
    std::vector<int> ports;
    for (const auto& p : fs::directory_iterator(fs::path(root) / dev / "ports", ec)) {
      const std::string name = p.path().filename().string();
      if (!name.empty() && std::all_of(name.begin(), name.end(), ::isdigit)) ports.push_back(std::stoi(name));
    }
    std::sort(ports.begin(), ports.end());
    for (int port : ports) {
      auto info = read_port(dev, port, root);
      if (info) out.push_back(std::move(info.value()));
    }
  }
  return out;
}

Result<int> detect_gid_index(const PortInfo& port, const std::string& ipv4) {
  if (port.link_layer == "InfiniBand") {
    if (port.gids.empty() || port.gids.front().index != 0)
      return error(Code::kNotFound, "{} port {}: InfiniBand port without a port GID (index 0)", port.device, port.port);
    return 0;
  }
  std::optional<Gid> want;
  if (!ipv4.empty()) {
    want = ipv4_mapped_gid(ipv4);
    if (!want) return error(Code::kInvalidArgument, "RDMA address '{}' is not an IPv4 address", ipv4);
  }
  for (const GidEntry& e : port.gids) {
    if (e.type != "RoCE v2" || !is_ipv4_mapped(e.gid)) continue;
    if (!want || e.gid == *want) return e.index;
  }
  std::string have;
  for (const GidEntry& e : port.gids) have += fmt::format(" [{}] {} {} ({})", e.index, gid_ipv4(e.gid), e.type, e.ndev);
  return error(Code::kNotFound, "{} port {} ({}): no RoCE v2 GID for {}; GID table:{}", port.device, port.port,
               port.link_layer, ipv4.empty() ? "an IPv4 address" : ipv4, have.empty() ? " empty" : have);
}

std::optional<UsablePort> first_usable_port(std::string* why_not, const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    if (why_not != nullptr)
      *why_not = fmt::format("{} does not exist (kernel without RDMA support, or no RDMA driver loaded)", root);
    return std::nullopt;
  }
  auto ports = list_ports(root);
  if (ports.empty()) {
    if (why_not != nullptr) *why_not = fmt::format("no RDMA devices under {}", root);
    return std::nullopt;
  }
  std::string reasons;
  for (const PortInfo& p : ports) {
    if (!p.active) {
      reasons += fmt::format("; {} port {} is not ACTIVE", p.device, p.port);
      continue;
    }
    auto idx = detect_gid_index(p, "");
    if (!idx) {
      reasons += "; " + idx.status().message();
      continue;
    }
    UsablePort u;
    u.port = p;
    u.gid_index = idx.value();
    for (const GidEntry& e : p.gids)
      if (e.index == u.gid_index) u.ipv4 = gid_ipv4(e.gid);
    return u;
  }
  if (why_not != nullptr) *why_not = "no usable RDMA port" + reasons;
  return std::nullopt;
}

}  // namespace rdx::transport::verbs
