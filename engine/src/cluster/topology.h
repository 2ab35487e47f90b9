#pragma once
// The topology file rdxd reads (engine/docs/topology.md is the contract). Parsing validates every field and rejects
// unknown keys, so a typo cannot silently change behaviour; errors name the field.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace rdx::cluster {

// Node ids are 10 bits wide where they travel (writer ids, cluster/worker_context.h).
inline constexpr size_t kMaxNodes = 1024;
// txn.protocol of a cluster that runs no transaction protocol: single-key commands only (MULTI/EXEC and multi-key
// commands are refused). Replication protocols that replicate single keys only (abd) require it.
inline constexpr std::string_view kNoTxnProtocol = "none";

// kRemoved: a data node a later epoch took out of the cluster (a running node keeps its slot, so node ids never
// change meaning; it is in no shard and nothing counts it).
enum class Role : uint8_t { kData, kRo, kProxy, kRemoved };

struct NodeSpec {
  uint16_t id = 0;  // index in `nodes` (transport NodeId)
  std::string name;
  std::string host;
  std::string rdma_addr;
  uint16_t port = 7000;
  uint16_t redis_port = 6379;
  uint16_t http_port = 9100;
  Role role = Role::kData;
  int shard = -1;  // data nodes: their shard
};

struct ShardSpec {
  uint32_t id = 0;
  std::vector<uint16_t> members;  // node ids; members[0] is the primary of view 0 (Membership has the current one)
};

// How data nodes notice each other's failure (cluster/failure_detector.h) and how long their leases last.
struct FailureDetection {
  bool enabled = true;
  uint32_t heartbeat_ms = 50;  // how often a node heartbeats every other data node
  uint32_t timeout_ms = 500;   // silence after which a node is suspected; also the lease a heartbeat grants
};

struct Topology {
  std::string cluster;
  uint32_t epoch = 1;
  std::string transport = "tcp";
  std::string primitives = "rpc";  // rpc | onesided | hybrid, as the transaction protocol honours (txn/cc.h)
  // With hybrid, the phases that run one-sided (names of txn::Phase, which the node checks against its protocol);
  // absent: the protocol's own hybrid choice.
  std::optional<std::vector<std::string>> onesided_phases;
  std::string device;
  int gid_index = -1;
  std::string rdma_interface;
  bool hugepages = true;
  bool batching = true;
  uint32_t batch_max_bytes = 4096;
  uint32_t batch_max_messages = 64;
  uint32_t workers = 2;
  uint32_t memory_mb = 256;
  std::string replication = "primary-backup";
  std::string txn_protocol = "dnl4";  // or kNoTxnProtocol
  bool local_backup_reads = true;
  bool ht_batching = true;
  std::string password_file;
  FailureDetection failure;
  std::vector<ShardSpec> shards;
  std::vector<NodeSpec> nodes;

  const NodeSpec* find_node(std::string_view name) const;
  // The shard of a key: a hash of the key, or of its hash tag when it has one (Redis Cluster's rule: the bytes
  // between the first '{' and the first '}' after it, if not empty), so keys that share a tag share a shard.
  uint32_t shard_of_key(std::string_view key) const;
  // The primary a cluster starts with; the current one is Membership::primary (it changes on failover).
  uint16_t initial_primary(uint32_t shard) const { return shards[shard].members[0]; }
  std::vector<uint16_t> initial_primaries() const;
};

// The data nodes of `t` other than `self` (every one coordinates writes and holds a shard).
std::vector<uint16_t> other_data_nodes(const Topology& t, uint16_t self);
// How many data nodes `t` has, and how many make a majority of them (exclusions and elections need one).
size_t data_node_count(const Topology& t);
inline size_t majority_of_data_nodes(const Topology& t) { return data_node_count(t) / 2 + 1; }

Result<Topology> parse_topology(std::string_view json_text);
// The file's contents (at most 4 MiB), and parse_topology with errors prefixed by the path; load_topology is both.
Result<std::string> read_topology_file(const std::string& path);
Result<Topology> parse_topology_file(const std::string& path, std::string_view text);
Result<Topology> load_topology(const std::string& path);

}  // namespace rdx::cluster
