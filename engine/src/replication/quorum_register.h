#pragma once
// What the leaderless quorum protocols (ABD, Classic Paxos) share: a replicated register per key whose replicas
// hold (tag, value), read with ABD's quorum read, and the recovery of a member whose memory is new.
//  - A key's replicas are the data nodes of its shard (members). Each holds (tag, value) in the store: the tag lives
//    in the record's version word, so a replica installs a write with one versioned put, which the store applies only
//    when it is newer (no lock, no turn). Records are never removed: a delete is a tombstone (a tag with the deleted
//    bit), so an older value cannot come back from a replica that missed the delete.
//  - Read (get): ask a majority of the members for (tag, value) and take the highest; if fewer than a majority hold
//    that tag already, write it back to a majority first (store), so no later read returns anything older. One round
//    trip when the majority agrees, two otherwise. Any data node coordinates any key's operation.
//  - The value a replica stores is the protocol's (Paxos keeps the operation that wrote it beside the client's value):
//    the protocol says what clients see of it (client_value) and which stored values are well formed (valid_blob).
//  - Every operation gives up kOpDeadline after it began and counts nothing it gathers later. A restarted member
//    (its memory is gone) answers only after recovery (quorum_recovery.cc): it waits until every operation that might
//    have counted its previous life's answers is finished or failed, then copies the shard (and whatever else its
//    protocol keeps, copy_extra) from every other member, so it holds every completed write and every tag its
//    previous life wrote (it must not write one of them again with another value). A member that restarts therefore
//    waits until every other member is in sync.
//  - Survives any minority of a shard's members down, with no election and no pause.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "replication/replication.h"
#include "replication/table_pager.h"
#include "rpc/codec.h"

namespace rdx::replication {

// A tag in a store version (48 bits): timestamp (37 bits) | writer node (10 bits) | deleted (1 bit). Distinct writes
// have distinct (timestamp, node) pairs, so the packed value orders them and the deleted bit never decides.
inline constexpr uint64_t kTagTsBits = 37;
inline constexpr uint64_t kTagMaxTs = (uint64_t{1} << kTagTsBits) - 1;
inline constexpr uint64_t pack_tag(uint64_t ts, uint16_t node, bool deleted) {
  return (ts << 11) | (uint64_t{node & 0x3ffu} << 1) | (deleted ? 1u : 0u);
}
inline constexpr uint64_t tag_ts(uint64_t tag) { return tag >> 11; }
inline constexpr uint16_t tag_node(uint64_t tag) { return static_cast<uint16_t>((tag >> 1) & 0x3ff); }
inline constexpr bool tag_deleted(uint64_t tag) { return (tag & 1) != 0; }

// An operation that has not finished this long after it began gives up (reads: kUnavailable; writes: kTimeout, may
// or may not have taken effect) and counts nothing it gathers later (Paxos: each round of an operation, which may
// take several). A restarted member waits this long (and a margin) before it copies its shard, so no operation can
// still count what its previous life answered.
inline constexpr auto kOpDeadline = std::chrono::milliseconds(1000);

// The register's messages, the first of the protocol's range; a protocol's own start at kFirstProtocolMsg.
enum QuorumMsg : uint16_t {
  kRegRead = 0,    // request: bytes key, u8 tag_only -> kOk: u64 tag (0: never written), [bytes value: !tag_only and
                   // tag != 0]; kUnavailable while the receiver is not in sync
  kRegWrite = 1,   // request: bytes key, u64 tag, bytes value -> kOk once stored (or a newer tag is)
  kRegStatus = 2,  // request (recovery): empty -> u8 in_sync, u8 ever_in_sync, u64 incarnation
  kRegScan = 3,    // request (recovery): u64 copy session -> u8 done, u32 count, count x (bytes key, u64 tag, bytes
                   // value), tombstones included; kUnavailable while the receiver is not in sync
  kRegFresh = 4,  // request (recovery): u64 incarnation -> kOk: the receiver, never in sync in that incarnation, starts
                  // in sync with the shard empty (its sender found every member new: a fresh shard)
  kFirstProtocolMsg = 5,
};

// What the workers of one node share.
class QuorumNode : public ReplicationNode {
 public:
  QuorumNode(const NodeEnv& env, std::string_view protocol);
  // No primary orders a key's writes: no node sees every write in order, so nothing is published here (the registry
  // line says so: complete_feed false).
  cluster::LogFeed& log_feed() override { return feed_; }
  std::string recovery_state() const override;

  const NodeEnv& env() const { return env_; }
  std::string_view protocol() const { return protocol_; }
  uint64_t incarnation() const { return incarnation_; }
  std::chrono::steady_clock::time_point started() const { return started_; }
  std::atomic<bool>& ever_in_sync() { return ever_in_sync_; }
  void set_recovery_state(std::string s);

 private:
  NodeEnv env_;
  std::string protocol_;
  cluster::LogFeed feed_;
  const uint64_t incarnation_;
  const std::chrono::steady_clock::time_point started_;
  std::atomic<bool> ever_in_sync_{false};
  mutable std::mutex state_mu_;
  std::string state_ = "starting";
};

class QuorumWorker : public ReplicationProtocol {
 public:
  QuorumWorker(QuorumNode& node, cluster::WorkerContext& ctx) : node_(node), ctx_(ctx), msgs_(node.env().msgs) {}

  // Registers the register's handlers, then the protocol's (start_protocol).
  Status start() override;
  rpc::Task<cluster::KvResult> get(std::string key) override;
  rpc::Task<void> recover() override;  // quorum_recovery.cc
  void on_peer_lost(uint16_t node) override;
  void on_peer_back(uint16_t) override {}
  void on_membership_change() override {}
  void on_topology_change() override {}
  void tick() override;
  cluster::ReplicaLog* replica_log() override { return nullptr; }

 protected:
  struct Replica {  // one member's answer to kRegRead
    uint64_t tag = 0;
    std::string value;
  };
  struct Members {
    std::vector<uint16_t> others;  // the shard's members but this node
    bool self = false;             // this node is one of them
    size_t majority = 0;
    size_t count() const { return others.size() + (self ? 1 : 0); }
  };
  Members members_of(std::string_view key) const;
  // Phase 1 of ABD's reads and writes: the highest (tag, value) a majority of in-sync members hold, and how many of
  // the answers hold it; `answered` false (with `why`) when fewer than a majority answered.
  struct Quorum {
    Members members;
    bool answered = false;
    Replica highest;
    size_t holders = 0;
    std::string why;
  };
  rpc::Task<Quorum> query(const std::string& key, bool tag_only);
  // Stores (tag, value) at a majority of the members (this node's copy included, when it is one).
  rpc::Task<bool> store(const std::string& key, const Members& m, uint64_t tag, const std::string& value,
                        std::string* why);
  // The message store() sends each other member: the register's kRegWrite (bytes key, u64 tag, bytes value). A
  // protocol with a leader stamps it instead (zab: the view it was proposed in), and serves its own type with
  // store_from once the stamp is checked.
  struct StoreRequest {
    rpc::MsgType type = 0;
    std::string payload;
  };
  virtual StoreRequest store_request(const std::string& key, uint64_t tag, const std::string& value) const;
  static void append_write(rpc::Writer& w, const std::string& key, uint64_t tag, const std::string& value);
  // Whether kRegWrite is served (a protocol whose writes carry a stamp refuses unstamped ones).
  virtual bool takes_register_writes() const { return true; }
  // Serves the rest of a write request (`rd` at its key: append_write's layout): installs it and answers.
  void store_from(const rpc::Incoming& in, rpc::Reader& rd);
  // The register's read: the newest (tag, value) a majority holds, written back first where needed. kNotFound for a
  // key never written or deleted (highest.tag says which).
  rpc::Task<Quorum> read_quorum(const std::string& key, Code* status);
  // This node's copy of `key` as a replica: (tag, value); kNotFound as tag 0.
  Replica read_local(const std::string& key);
  // Stores (tag, value) here unless a newer tag is (which is what the writer asked for too).
  virtual Code install(const std::string& key, uint64_t tag, std::string_view value);
  Code put_versioned(const std::string& key, uint64_t tag, std::string_view value);

  // What the protocol adds.
  virtual Status start_protocol() { return Status::ok(); }
  // What clients see of a stored value (the protocol may keep more beside it).
  virtual std::string_view client_value(std::string_view stored) const { return stored; }
  // Whether a stored value that arrived in a message is well formed for `tag`.
  virtual bool valid_blob(uint64_t tag, std::string_view stored) const = 0;
  // Recovery: which in-sync members a recovering member copies from (the quorum register: every other member), and
  // what it copies from `source` beyond the records (after them).
  virtual std::vector<uint16_t> copy_sources(std::vector<uint16_t> others) const { return others; }
  virtual rpc::Task<bool> copy_extra(uint16_t) { co_return true; }
  virtual void tick_protocol() {}
  // Whether this node answers a member's copy of its records now (beyond being in sync; zab: a leader only once it
  // gathered what the old leader left, so a follower never catches up with less).
  virtual bool serves_copies() const { return true; }

  // Whether a message comes from a data node (any may coordinate), or from a member of this node's shard.
  bool from_data_node(const rpc::Incoming& in) const;
  bool from_member(const rpc::Incoming& in) const;
  // Whether `key` is a valid key this node holds a replica of.
  bool replicates(std::string_view key) const;
  // Whether a tag from a message is one a writer of this topology could have made (timestamp above 0, in the
  // store's version range, a node that exists).
  bool valid_tag(uint64_t tag) const;
  std::string_view protocol() const { return node_.protocol(); }
  // Copies every record `source` holds (install()), as recovery does; false when a page failed (try again).
  rpc::Task<bool> copy_from(uint16_t source);

  QuorumNode& node_;
  cluster::WorkerContext& ctx_;
  rpc::MsgRange msgs_;

 private:
  void serve_read(const rpc::Incoming& in);
  void serve_write(const rpc::Incoming& in);
  void serve_status(const rpc::Incoming& in);
  void serve_scan(const rpc::Incoming& in);
  void serve_fresh(const rpc::Incoming& in);

  // quorum_recovery.cc
  rpc::Task<bool> recover_once();

  CopySessions<TablePager> copies_;  // the copies this node serves to recovering members
  uint64_t copies_started_ = 0;      // the copies this node asked for (session ids)
};

}  // namespace rdx::replication
