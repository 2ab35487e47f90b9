#include "cluster/topology_change.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <utility>

#include "common/hash.h"

namespace rdx::cluster {

namespace {

// What a running node cannot change, by the file's names, with their values as text.
std::vector<std::pair<const char*, std::string>> settings(const Topology& t) {
  return {
      {"cluster", t.cluster},
      {"transport.kind", t.transport},
      {"transport.primitives", t.primitives},
      {"transport.onesided_phases", t.onesided_phases ? fmt::format("{}", fmt::join(*t.onesided_phases, ",")) : "-"},
      {"transport.device", t.device},
      {"transport.gid_index", std::to_string(t.gid_index)},
      {"transport.rdma_interface", t.rdma_interface},
      {"transport.hugepages", std::to_string(t.hugepages)},
      {"transport.batching", fmt::format("{}/{}/{}", t.batching, t.batch_max_bytes, t.batch_max_messages)},
      {"workers", std::to_string(t.workers)},
      {"memory_mb", std::to_string(t.memory_mb)},
      {"replication", t.replication},
      {"txn", fmt::format("{}/{}/{}", t.txn_protocol, t.local_backup_reads, t.ht_batching)},
      {"auth", t.password_file},
      {"failure_detection", fmt::format("{}/{}/{}", t.failure.enabled, t.failure.heartbeat_ms, t.failure.timeout_ms)},
      {"shards (their number)", std::to_string(t.shards.size())}};
}

std::vector<std::string> changed_settings(const Topology& a, const Topology& b) {
  std::vector<std::string> out;
  auto sa = settings(a), sb = settings(b);
  for (size_t i = 0; i < sa.size(); ++i)
    if (sa[i].second != sb[i].second) out.emplace_back(sa[i].first);
  return out;
}

// `a` and `b` name the same node at the same address (its shard and role may differ: it is re-added or removed).
bool same_node(const NodeSpec& a, const NodeSpec& b) {
  return a.name == b.name && a.host == b.host && a.rdma_addr == b.rdma_addr && a.port == b.port &&
         a.redis_port == b.redis_port && a.http_port == b.http_port;
}

}  // namespace

Result<TopologyChange> plan_topology_change(const Topology& running, const Topology& next, uint16_t self) {
  if (next.epoch <= running.epoch)
    return error(Code::kInvalidArgument, "epoch {} is not newer than the running epoch {}", next.epoch, running.epoch);
  if (auto diff = changed_settings(running, next); !diff.empty())
    return error(Code::kUnsupported, "epoch {} changes {}: only data nodes can be added or removed without a restart",
                 next.epoch, fmt::join(diff, ", "));
  TopologyChange c;
  c.merged = next;
  for (size_t i = 0; i < running.nodes.size(); ++i) {
    const NodeSpec& was = running.nodes[i];
    if (i >= next.nodes.size()) {  // removed from the file: keeps its slot
      NodeSpec gone = was;
      gone.role = Role::kRemoved;
      gone.shard = -1;
      if (was.role == Role::kData) c.removed.push_back(static_cast<uint16_t>(i));
      c.merged.nodes.push_back(std::move(gone));
      continue;
    }
    const NodeSpec& now = next.nodes[i];
    if (!same_node(was, now))
      return error(Code::kUnsupported,
                   "epoch {}: node {} is '{}' at {}:{} in the running epoch {} and '{}' at {}:{} now; a running "
                   "cluster only appends nodes and removes them from the end",
                   next.epoch, i, was.name, was.host, was.port, running.epoch, now.name, now.host, now.port);
    if (was.role == Role::kData && now.role == Role::kData && was.shard != now.shard)
      return error(Code::kUnsupported, "epoch {}: node '{}' moves from shard {} to shard {}", next.epoch, now.name,
                   was.shard, now.shard);
    if (was.role != Role::kData && now.role == Role::kData) c.added.push_back(static_cast<uint16_t>(i));
    if (was.role == Role::kData && now.role != Role::kData) c.removed.push_back(static_cast<uint16_t>(i));
  }
  for (size_t i = running.nodes.size(); i < next.nodes.size(); ++i)
    if (next.nodes[i].role == Role::kData) c.added.push_back(static_cast<uint16_t>(i));
  // Every majority of the old data nodes must meet every majority of the new ones: |old|/2+1 + |new|/2+1 > |both|.
  const size_t before = data_node_count(running), after = data_node_count(next);
  const size_t both = before + c.added.size();  // the union: the old ones and those added
  if (before / 2 + 1 + after / 2 + 1 <= both && next.epoch > running.epoch + 1)
    c.rejoin = true;  // the epochs in between were applied by the others, one overlapping step each
  else if (before / 2 + 1 + after / 2 + 1 <= both)
    return error(Code::kUnsupported,
                 "epoch {} goes from {} to {} data nodes ({} added, {} removed): a majority of the old ones and one "
                 "of the new ones could be disjoint; change one node per epoch",
                 next.epoch, before, after, c.added.size(), c.removed.size());
  c.self_removed = self >= next.nodes.size() || next.nodes[self].role != Role::kData;
  return c;
}

uint32_t restart_fingerprint(const Topology& t) {
  // The rule that maps keys to shards is part of it: builds that place keys differently (hash tags came with
  // placement 2) must not run one cluster together.
  std::string text = "placement=2;";
  for (const auto& [name, value] : settings(t)) text += fmt::format("{}={};", name, value);
  const auto h = static_cast<uint32_t>(hash_key(text));
  return h == 0 ? 1 : h;  // (0 is no epoch)
}

}  // namespace rdx::cluster
