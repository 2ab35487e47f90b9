#include "cluster/topology.h"

#include <arpa/inet.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/hash.h"

namespace rdx::cluster {

using nlohmann::json;

namespace {

// Field readers: each checks presence, type and range, and names the field on error.
class Reader {
 public:
  Reader(const json& obj, std::string path) : obj_(obj), path_(std::move(path)) {}

  Status check_object() const {
    if (!obj_.is_object()) return error(Code::kInvalidArgument, "{}: must be an object", where());
    return Status::ok();
  }
  Status only(std::initializer_list<const char*> allowed) const {
    std::set<std::string> ok(allowed.begin(), allowed.end());
    for (const auto& [k, v] : obj_.items())
      if (ok.count(k) == 0) return error(Code::kInvalidArgument, "{}: unknown field '{}'", where(), k);
    return Status::ok();
  }
  bool has(const char* key) const { return obj_.contains(key); }
  Status str(const char* key, std::string* out, bool required = false) const {
    if (!obj_.contains(key)) return missing(key, required);
    const json& v = obj_.at(key);
    if (!v.is_string()) return error(Code::kInvalidArgument, "{}.{}: must be a string", where(), key);
    *out = v.get<std::string>();
    return Status::ok();
  }
  template <typename T>
  Status integer(const char* key, T* out, int64_t lo, int64_t hi, bool required = false) const {
    if (!obj_.contains(key)) return missing(key, required);
    const json& v = obj_.at(key);
    if (!v.is_number_integer()) return error(Code::kInvalidArgument, "{}.{}: must be an integer", where(), key);
    int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
      return error(Code::kInvalidArgument, "{}.{}: {} is out of range {}..{}", where(), key, x, lo, hi);
    *out = static_cast<T>(x);
    return Status::ok();
  }
  Status boolean(const char* key, bool* out) const {
    if (!obj_.contains(key)) return Status::ok();
    const json& v = obj_.at(key);
    if (!v.is_boolean()) return error(Code::kInvalidArgument, "{}.{}: must be true or false", where(), key);
    *out = v.get<bool>();
    return Status::ok();
  }
  // A list of strings (absent: left as it is); each must be a non-empty string, none twice.
  Status strings(const char* key, std::vector<std::string>* out) const {
    if (!obj_.contains(key)) return Status::ok();
    const json& v = obj_.at(key);
    if (!v.is_array()) return error(Code::kInvalidArgument, "{}.{}: must be a list of strings", where(), key);
    out->clear();
    for (const json& e : v) {
      if (!e.is_string() || e.get<std::string>().empty())
        return error(Code::kInvalidArgument, "{}.{}: must be a list of non-empty strings", where(), key);
      if (std::find(out->begin(), out->end(), e.get<std::string>()) != out->end())
        return error(Code::kInvalidArgument, "{}.{}: '{}' is listed twice", where(), key, e.get<std::string>());
      out->push_back(e.get<std::string>());
    }
    return Status::ok();
  }
  Status one_of(const char* key, std::string* out, std::initializer_list<const char*> allowed) const {
    RDX_RETURN_IF_ERROR(str(key, out));
    std::string list;
    for (const char* a : allowed) {
      if (*out == a) return Status::ok();
      list += list.empty() ? a : std::string(", ") + a;
    }
    return error(Code::kInvalidArgument, "{}.{}: '{}' is not one of: {}", where(), key, *out, list);
  }
  Reader child(const char* key) const { return Reader(obj_.contains(key) ? obj_.at(key) : empty(), path_ + "." + key); }
  const json& raw() const { return obj_; }
  std::string where() const { return path_; }

 private:
  static const json& empty() {
    static const json e = json::object();
    return e;
  }
  Status missing(const char* key, bool required) const {
    if (required) return error(Code::kInvalidArgument, "{}.{}: required field is missing", where(), key);
    return Status::ok();
  }
  const json& obj_;
  std::string path_;
};

// [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 characters (a DNS label, as Kubernetes names are).
bool is_dns_label(const std::string& s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

Status parse_transport(const Reader& r, Topology& t) {
  RDX_RETURN_IF_ERROR(r.check_object());
  RDX_RETURN_IF_ERROR(r.only(
      {"kind", "primitives", "onesided_phases", "device", "gid_index", "rdma_interface", "hugepages", "batching"}));
  RDX_RETURN_IF_ERROR(r.one_of("kind", &t.transport, {"tcp", "verbs"}));
  RDX_RETURN_IF_ERROR(r.one_of("primitives", &t.primitives, {"onesided", "rpc", "hybrid"}));
  // (The phase names are the transaction family's: the node checks them against its protocol, txn/cc.h.)
  if (r.has("onesided_phases")) {
    std::vector<std::string> phases;
    RDX_RETURN_IF_ERROR(r.strings("onesided_phases", &phases));
    if (t.primitives != "hybrid")
      return error(Code::kInvalidArgument,
                   "{}.onesided_phases: chooses the phases of primitives 'hybrid', and primitives is '{}' (remove it, "
                   "or set primitives to hybrid)",
                   r.where(), t.primitives);
    if (phases.empty())
      return error(Code::kInvalidArgument,
                   "{}.onesided_phases: lists no phase (for no one-sided phase use primitives rpc)", r.where());
    t.onesided_phases = std::move(phases);
  }
  RDX_RETURN_IF_ERROR(r.str("device", &t.device));
  RDX_RETURN_IF_ERROR(r.integer("gid_index", &t.gid_index, -1, 255));
  RDX_RETURN_IF_ERROR(r.str("rdma_interface", &t.rdma_interface));
  RDX_RETURN_IF_ERROR(r.boolean("hugepages", &t.hugepages));
  Reader b = r.child("batching");
  RDX_RETURN_IF_ERROR(b.check_object());
  RDX_RETURN_IF_ERROR(b.only({"enabled", "max_bytes", "max_messages"}));
  RDX_RETURN_IF_ERROR(b.boolean("enabled", &t.batching));
  RDX_RETURN_IF_ERROR(b.integer("max_bytes", &t.batch_max_bytes, 64, 65536));
  RDX_RETURN_IF_ERROR(b.integer("max_messages", &t.batch_max_messages, 1, 1024));
  return Status::ok();
}

Status parse_nodes(const Reader& r, Topology& t) {
  const json& arr = r.raw().contains("nodes") ? r.raw().at("nodes") : json();
  if (!arr.is_array() || arr.empty()) return error(Code::kInvalidArgument, "topology.nodes: must be a non-empty array");
  if (arr.size() > kMaxNodes) return error(Code::kInvalidArgument, "topology.nodes: at most {} nodes", kMaxNodes);
  std::set<std::string> names;
  for (size_t i = 0; i < arr.size(); ++i) {
    Reader n(arr[i], fmt::format("topology.nodes[{}]", i));
    RDX_RETURN_IF_ERROR(n.check_object());
    RDX_RETURN_IF_ERROR(n.only({"name", "host", "rdma_addr", "port", "redis_port", "http_port", "role"}));
    NodeSpec s;
    s.id = static_cast<uint16_t>(i);
    RDX_RETURN_IF_ERROR(n.str("name", &s.name, true));
    if (s.name.empty() || s.name.size() > 253)
      return error(Code::kInvalidArgument, "{}.name: must be 1..253 characters", n.where());
    if (!names.insert(s.name).second)
      return error(Code::kInvalidArgument, "{}.name: duplicate node name '{}'", n.where(), s.name);
    RDX_RETURN_IF_ERROR(n.str("host", &s.host, true));
    if (s.host.empty()) return error(Code::kInvalidArgument, "{}.host: must not be empty", n.where());
    RDX_RETURN_IF_ERROR(n.str("rdma_addr", &s.rdma_addr));
    in_addr tmp{};
    if (!s.rdma_addr.empty() && inet_pton(AF_INET, s.rdma_addr.c_str(), &tmp) != 1)
      return error(Code::kInvalidArgument, "{}.rdma_addr: '{}' is not an IPv4 address", n.where(), s.rdma_addr);
    RDX_RETURN_IF_ERROR(n.integer("port", &s.port, 1, 65535));
    RDX_RETURN_IF_ERROR(n.integer("redis_port", &s.redis_port, 0, 65535));
    RDX_RETURN_IF_ERROR(n.integer("http_port", &s.http_port, 1, 65535));
    std::string role = "data";
    RDX_RETURN_IF_ERROR(n.one_of("role", &role, {"data", "ro", "proxy"}));
    s.role = role == "data" ? Role::kData : role == "ro" ? Role::kRo : Role::kProxy;
    t.nodes.push_back(std::move(s));
  }
  return Status::ok();
}

Status parse_shards(const Reader& r, Topology& t) {
  const json& arr = r.raw().contains("shards") ? r.raw().at("shards") : json();
  if (!arr.is_array() || arr.empty())
    return error(Code::kInvalidArgument, "topology.shards: must be a non-empty array");
  for (size_t i = 0; i < arr.size(); ++i) {
    Reader s(arr[i], fmt::format("topology.shards[{}]", i));
    RDX_RETURN_IF_ERROR(s.check_object());
    RDX_RETURN_IF_ERROR(s.only({"id", "members"}));
    ShardSpec sh;
    RDX_RETURN_IF_ERROR(s.integer("id", &sh.id, 0, 1 << 20, true));
    if (sh.id != i)
      return error(Code::kInvalidArgument, "{}.id: shard ids must be 0..N-1 in order (got {})", s.where(), sh.id);
    const json& mem = s.raw().contains("members") ? s.raw().at("members") : json();
    if (!mem.is_array() || mem.empty() || mem.size() > 7)
      return error(Code::kInvalidArgument, "{}.members: must be an array of 1..7 node names", s.where());
    for (const json& m : mem) {
      if (!m.is_string()) return error(Code::kInvalidArgument, "{}.members: must hold node names", s.where());
      const NodeSpec* n = t.find_node(m.get<std::string>());
      if (n == nullptr)
        return error(Code::kInvalidArgument, "{}.members: unknown node '{}'", s.where(), m.get<std::string>());
      if (n->role != Role::kData)
        return error(Code::kInvalidArgument, "{}.members: node '{}' is not a data node", s.where(), n->name);
      if (n->shard >= 0)
        return error(Code::kInvalidArgument, "{}.members: node '{}' is already a member of shard {}", s.where(),
                     n->name, n->shard);
      t.nodes[n->id].shard = static_cast<int>(i);
      sh.members.push_back(n->id);
    }
    t.shards.push_back(std::move(sh));
  }
  for (const NodeSpec& n : t.nodes)
    if (n.role == Role::kData && n.shard < 0)
      return error(Code::kInvalidArgument, "topology.nodes: data node '{}' is in no shard", n.name);
  return Status::ok();
}

}  // namespace

const NodeSpec* Topology::find_node(std::string_view name) const {
  for (const NodeSpec& n : nodes)
    if (n.name == name) return &n;
  return nullptr;
}

std::vector<uint16_t> Topology::initial_primaries() const {
  std::vector<uint16_t> out;
  for (uint32_t s = 0; s < shards.size(); ++s) out.push_back(initial_primary(s));
  return out;
}

size_t data_node_count(const Topology& t) {
  return static_cast<size_t>(
      std::count_if(t.nodes.begin(), t.nodes.end(), [](const NodeSpec& n) { return n.role == Role::kData; }));
}

std::vector<uint16_t> other_data_nodes(const Topology& t, uint16_t self) {
  std::vector<uint16_t> out;
  for (const NodeSpec& n : t.nodes)
    if (n.id != self && n.role == Role::kData) out.push_back(n.id);
  return out;
}

namespace {
std::string_view hash_tag_or_key(std::string_view key) {
  const size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  const size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}
}  // namespace

uint32_t Topology::shard_of_key(std::string_view key) const {
  // High bits of the hash (the hashtable indexes with the low bits of the whole key's).
  return static_cast<uint32_t>((hash_key(hash_tag_or_key(key)) >> 32) % shards.size());
}

Result<Topology> parse_topology(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return error(Code::kInvalidArgument, "topology: not valid JSON");
  Reader r(doc, "topology");
  RDX_RETURN_IF_ERROR(r.check_object());
  RDX_RETURN_IF_ERROR(r.only({"cluster", "epoch", "transport", "workers", "memory_mb", "replication", "txn", "auth",
                              "failure_detection", "shards", "nodes"}));
  Topology t;
  RDX_RETURN_IF_ERROR(r.str("cluster", &t.cluster, true));
  if (!is_dns_label(t.cluster))
    return error(Code::kInvalidArgument, "topology.cluster: '{}' must be a DNS label ([a-z0-9-], <= 63)", t.cluster);
  RDX_RETURN_IF_ERROR(r.integer("epoch", &t.epoch, 1, UINT32_MAX, true));
  RDX_RETURN_IF_ERROR(parse_transport(r.child("transport"), t));
  RDX_RETURN_IF_ERROR(r.integer("workers", &t.workers, 1, 64));
  RDX_RETURN_IF_ERROR(r.integer("memory_mb", &t.memory_mb, 16, 1 << 20));
  Reader rep = r.child("replication");
  RDX_RETURN_IF_ERROR(rep.check_object());
  RDX_RETURN_IF_ERROR(rep.only({"protocol"}));
  RDX_RETURN_IF_ERROR(rep.str("protocol", &t.replication));
  Reader tx = r.child("txn");
  RDX_RETURN_IF_ERROR(tx.check_object());
  RDX_RETURN_IF_ERROR(tx.only({"protocol", "local_backup_reads", "ht_batching"}));
  RDX_RETURN_IF_ERROR(tx.str("protocol", &t.txn_protocol));
  RDX_RETURN_IF_ERROR(tx.boolean("local_backup_reads", &t.local_backup_reads));
  RDX_RETURN_IF_ERROR(tx.boolean("ht_batching", &t.ht_batching));
  Reader auth = r.child("auth");
  RDX_RETURN_IF_ERROR(auth.check_object());
  RDX_RETURN_IF_ERROR(auth.only({"password_file"}));
  RDX_RETURN_IF_ERROR(auth.str("password_file", &t.password_file));
  Reader fd = r.child("failure_detection");
  RDX_RETURN_IF_ERROR(fd.check_object());
  RDX_RETURN_IF_ERROR(fd.only({"enabled", "heartbeat_ms", "timeout_ms"}));
  RDX_RETURN_IF_ERROR(fd.boolean("enabled", &t.failure.enabled));
  RDX_RETURN_IF_ERROR(fd.integer("heartbeat_ms", &t.failure.heartbeat_ms, 5, 10000));
  RDX_RETURN_IF_ERROR(fd.integer("timeout_ms", &t.failure.timeout_ms, 20, 60000));
  if (t.failure.timeout_ms < 4 * t.failure.heartbeat_ms)
    return error(Code::kInvalidArgument,
                 "topology.failure_detection.timeout_ms: {} must be at least 4 heartbeats ({} ms each)",
                 t.failure.timeout_ms, t.failure.heartbeat_ms);
  RDX_RETURN_IF_ERROR(parse_nodes(r, t));
  RDX_RETURN_IF_ERROR(parse_shards(r, t));
  return t;
}

Result<std::string> read_topology_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return error(Code::kInvalidArgument, "cannot read topology file '{}'", path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().size() > (4u << 20)) return error(Code::kInvalidArgument, "topology file '{}' is over 4 MiB", path);
  return ss.str();
}

Result<Topology> parse_topology_file(const std::string& path, std::string_view text) {
  auto t = parse_topology(text);
  if (!t) return Status(t.status().code(), fmt::format("{}: {}", path, t.status().message()));
  return t;
}

Result<Topology> load_topology(const std::string& path) {
  auto text = read_topology_file(path);
  if (!text) return text.status();
  return parse_topology_file(path, text.value());
}

}  // namespace rdx::cluster
