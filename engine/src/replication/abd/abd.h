#pragma once
// ABD (Attiya, Bar-Noy, Dolev), as Odyssey runs it: a leaderless, quorum-based replicated register per key. Any data
// node coordinates any key's operation; nothing orders writes but their tags.
//  - A key's replicas hold (tag, value). A tag is a logical timestamp and the node that wrote it, compared in that
//    order; it lives in the store's version word (the 48 bits split below), so a replica installs a write with one
//    versioned put, which the store applies only when it is newer (no lock, no turn).
//  - Write: ask a majority of the shard's members for their tags, pick the next timestamp above the highest, send
//    (tag, value) to every member and report once a majority stored it. Two round trips. Concurrent writers of one
//    node never pick the same (timestamp, node): the node hands timestamps out from counters striped by key hash,
//    each above the highest the writer saw and above every one it handed out in that stripe (AbdNode::next_ts).
//  - Read: ask a majority for (tag, value) and take the highest; if fewer than a majority hold that tag already,
//    write it back to a majority first (so no later read returns anything older). One round trip when the majority
//    agrees, two otherwise.
//  - Deletes write a tombstone (a tag with the deleted bit); records are never removed, so an older value cannot
//    come back from a replica that missed the delete.
//  - Reads and plain writes only: a read-modify-write (INCR, SETNX, CAS, SET ... GET) needs one agreed order of the
//    key's writes, which ABD does not have; they are refused with kUnsupported and change nothing.
//  - Survives any minority of a shard's members down, with no election and no pause: every operation needs only a
//    majority's answers.
//  - A restarted member (its memory is gone) answers reads only after recovery (recovery.cc): it waits until every
//    operation that might have counted its previous life's answers is finished or failed (operations give up after
//    kOpDeadline), then copies the shard from every other member, so it holds every completed write and every tag
//    its previous life wrote (it must not write one of them again with another value). A member that restarts
//    therefore waits until every other member is in sync.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "replication/replication.h"
#include "replication/table_pager.h"

namespace rdx::replication::abd {

std::unique_ptr<ReplicationNode> make_node(const NodeEnv& env);

// A tag in a store version (48 bits): timestamp (37 bits) | writer node (10 bits) | deleted (1 bit). Distinct writes
// have distinct (timestamp, node) pairs, so the packed value orders them and the deleted bit never decides.
inline constexpr uint64_t kTagTsBits = 37;
inline constexpr uint64_t kTagMaxTs = (uint64_t{1} << kTagTsBits) - 1;
inline constexpr uint64_t pack_tag(uint64_t ts, uint16_t node, bool deleted) {
  return (ts << 11) | (uint64_t{node & 0x3ffu} << 1) | (deleted ? 1u : 0u);
}
inline constexpr uint64_t tag_ts(uint64_t tag) { return tag >> 11; }
inline constexpr bool tag_deleted(uint64_t tag) { return (tag & 1) != 0; }

// An operation that has not finished this long after it began gives up (reads: kUnavailable; writes: kTimeout, may
// or may not have taken effect) and counts nothing it gathers later. A restarted member waits this long (and a
// margin) before it copies its shard, so no operation can still count what its previous life answered.
inline constexpr auto kOpDeadline = std::chrono::milliseconds(1000);

enum Msg : uint16_t {
  kRead = 0,    // request: bytes key, u8 tag_only -> kOk: u64 tag (0: never written), [bytes value: !tag_only, a
                // live value]; kUnavailable while the receiver is not in sync
  kWrite = 1,   // request: bytes key, u64 tag, bytes value -> kOk once stored (or a newer tag is)
  kStatus = 2,  // request (recovery): empty -> u8 in_sync, u8 ever_in_sync, u64 incarnation
  kScan = 3,    // request (recovery): u64 copy session -> u8 done, u32 count, count x (bytes key, u64 tag, bytes
                // value), tombstones included; kUnavailable while the receiver is not in sync
  kFresh = 4,   // request (recovery): u64 incarnation -> kOk: the receiver, never in sync in that incarnation, starts
                // in sync with the shard empty (its sender found every member new: a fresh shard)
};

// What the workers of one node share.
class AbdNode final : public ReplicationNode {
 public:
  explicit AbdNode(const NodeEnv& env);
  std::unique_ptr<ReplicationProtocol> make_worker(cluster::WorkerContext& ctx) override;
  // ABD has no primary ordering a key's writes: no node sees every write in order, so nothing is published here
  // (the registry line says so: complete_feed false).
  cluster::LogFeed& log_feed() override { return feed_; }
  std::string recovery_state() const override;

  const NodeEnv& env() const { return env_; }
  uint64_t incarnation() const { return incarnation_; }
  std::chrono::steady_clock::time_point started() const { return started_; }
  std::atomic<bool>& ever_in_sync() { return ever_in_sync_; }
  // A timestamp for a write of the key hashed `h` that saw `highest`: above it, and unique on this node.
  uint64_t next_ts(uint64_t h, uint64_t highest);
  void set_recovery_state(std::string s);

 private:
  NodeEnv env_;
  cluster::LogFeed feed_;
  const uint64_t incarnation_;
  const std::chrono::steady_clock::time_point started_;
  std::atomic<bool> ever_in_sync_{false};
  std::array<std::atomic<uint64_t>, 4096> issued_{};  // the last timestamp handed out, by key-hash stripe
  mutable std::mutex state_mu_;
  std::string state_ = "starting";
};

class AbdWorker final : public ReplicationProtocol {
 public:
  AbdWorker(AbdNode& node, cluster::WorkerContext& ctx) : node_(node), ctx_(ctx), msgs_(node.env().msgs) {}

  Status start() override;
  rpc::Task<cluster::KvResult> get(std::string key) override;
  rpc::Task<WriteResult> write(std::string key, Rmw op) override;
  rpc::Task<void> recover() override;  // recovery.cc
  void on_peer_lost(uint16_t node) override;
  void on_peer_back(uint16_t) override {}
  void on_membership_change() override {}
  void on_topology_change() override {}
  void tick() override;
  cluster::ReplicaLog* replica_log() override { return nullptr; }

 private:
  struct Replica {  // one member's answer to kRead
    uint64_t tag = 0;
    std::string value;
  };
  struct Members {
    std::vector<uint16_t> others;  // the shard's members but this node
    bool self = false;             // this node is one of them
    size_t majority = 0;
  };
  Members members_of(std::string_view key) const;
  // Phase 1 of reads and writes: the highest (tag, value) a majority of in-sync members hold, and how many of the
  // answers hold it; `answered` false (with `why`) when fewer than a majority answered.
  struct Quorum {
    Members members;
    bool answered = false;
    Replica highest;
    size_t holders = 0;
    std::string why;
  };
  rpc::Task<Quorum> query(const std::string& key, bool tag_only);
  // Phase 2: stores (tag, value) at a majority of the members (this node's copy included, when it is one).
  rpc::Task<bool> store(const std::string& key, const Members& m, uint64_t tag, const std::string& value,
                        std::string* why);
  // This node's copy of `key` as a replica: (tag, value); kNotFound as tag 0.
  Replica read_local(const std::string& key);
  Code install(const std::string& key, uint64_t tag, const std::string& value);

  // Whether a message comes from a data node (any may coordinate), or from a member of this node's shard.
  bool from_data_node(const rpc::Incoming& in) const;
  bool from_member(const rpc::Incoming& in) const;
  void serve_read(const rpc::Incoming& in);
  void serve_write(const rpc::Incoming& in);
  void serve_status(const rpc::Incoming& in);
  void serve_scan(const rpc::Incoming& in);
  void serve_fresh(const rpc::Incoming& in);

  // recovery.cc
  rpc::Task<bool> recover_once();
  rpc::Task<bool> copy_from(uint16_t source);
  void expire_copies();

  AbdNode& node_;
  cluster::WorkerContext& ctx_;
  rpc::MsgRange msgs_;
  CopySessions<TablePager> copies_;  // the copies this node serves to recovering members
  uint64_t copies_started_ = 0;      // the copies this node asked for (session ids)
};

}  // namespace rdx::replication::abd
