#pragma once
// ABD (Attiya, Bar-Noy, Dolev), as Odyssey runs it: a leaderless, quorum-based replicated register per key
// (quorum_register.h: tags, reads, recovery). Any data node coordinates any key's operation; nothing orders writes
// but their tags.
//  - Write: ask a majority of the shard's members for their tags, pick the next timestamp above the highest, send
//    (tag, value) to every member and report once a majority stored it. Two round trips. Concurrent writers of one
//    node never pick the same (timestamp, node): the node hands timestamps out from counters striped by key hash,
//    each above the highest the writer saw and above every one it handed out in that stripe (AbdNode::next_ts).
//  - Read: the register's (one round trip when a majority agrees, two otherwise).
//  - Deletes write a tombstone (a tag with the deleted bit and an empty value).
//  - Reads and plain writes only: a read-modify-write (INCR, SETNX, CAS, SET ... GET) needs one agreed order of the
//    key's writes, which ABD does not have; they are refused with kUnsupported and change nothing (Classic Paxos,
//    paxos/, offers them).
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "replication/quorum_register.h"

namespace rdx::replication::abd {

std::unique_ptr<ReplicationNode> make_node(const NodeEnv& env);

// What the workers of one node share.
class AbdNode final : public QuorumNode {
 public:
  explicit AbdNode(const NodeEnv& env) : QuorumNode(env, "abd") {}
  std::unique_ptr<ReplicationProtocol> make_worker(cluster::WorkerContext& ctx) override;
  // A timestamp for a write of the key hashed `h` that saw `highest`: above it, and unique on this node.
  uint64_t next_ts(uint64_t h, uint64_t highest);

 private:
  std::array<std::atomic<uint64_t>, 4096> issued_{};  // the last timestamp handed out, by key-hash stripe
};

class AbdWorker final : public QuorumWorker {
 public:
  AbdWorker(AbdNode& node, cluster::WorkerContext& ctx) : QuorumWorker(node, ctx), abd_(node) {}
  rpc::Task<WriteResult> write(std::string key, Rmw op) override;

 private:
  // ABD's tombstones carry no value.
  bool valid_blob(uint64_t tag, std::string_view stored) const override { return !tag_deleted(tag) || stored.empty(); }

  AbdNode& abd_;
};

}  // namespace rdx::replication::abd
