#pragma once
// Recovery of a restarted or excluded member: its memory is empty (or may have missed writes), so before it serves
// it copies its shard from a live replica. Every worker serves the handlers; worker 0 drives the node's recovery:
//  1. Ask the other members of the shard whether they are in sync. Some are: join. None is and none holds data,
//     and every member answered: a fresh cluster, start empty (a member that did not answer may hold the only copy).
//  2. Join: tell every other data node to include this node as a replica again (kJoining) and to wait until every
//     write that chose its replicas before that (an older membership generation) has finished; from then on every
//     write replicates to this node.
//  3. Copy the shard from an in-sync member (the primary if it is one) page by page; records carry versions, so a
//     copy never overwrites a newer replicated write, and deletes applied meanwhile leave tombstones so an older
//     copied record cannot resurrect a key.
//  4. In sync: serve, and tell the other nodes (kInSync).
//  5. Afterwards, once a second, ask every data node how it sees this node: if one excluded it (a connection broke,
//     so it may have missed writes), stop serving and recover again, keeping the local copy: it is dropped only
//     once a member in sync is there to copy from. If no member is in sync (e.g. two backups that excluded each
//     other while the primary restarts), members that hold such a copy from the newest view (or are its primary)
//     rejoin with it and the others wait for them; "start empty" is only for a shard where every member answered
//     and none holds anything.
// A restarting primary copies from a backup: backups hold every committed write (writes reach the backups before
// they are reported). Until a primary is in sync it refuses writes and locks, so its shard is unavailable meanwhile
// (unless the others elect another primary first, election.cc: then it learns the new view from their answers and
// copies from the new primary as a backup).
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cluster/membership.h"
#include "cluster/worker_context.h"
#include "replication/primary_backup/undecided.h"
#include "replication/table_pager.h"
#include "rpc/rpc.h"
#include "store/hashtable.h"

namespace rdx::replication::primary_backup {

// What the node's recovery shares between its workers.
class RecoveryState {
 public:
  // While this node copies a snapshot (joining), deletes it applies leave tombstones so an older snapshot record
  // arriving later cannot resurrect the key. Both paths hold the same mutex, so neither interleaves the other.
  bool joining() const { return joining_.load(std::memory_order_acquire); }
  void set_joining(bool v) {
    std::lock_guard<std::mutex> lk(tomb_mu_);
    joining_.store(v, std::memory_order_release);
    if (!v) tombstones_.clear();
  }
  // Runs `remove` (which deletes `key` at `version`) and remembers the tombstone when joining.
  template <typename F>
  void delete_with_tombstone(std::string_view key, uint64_t version, F remove) {
    if (!joining()) return remove();
    std::lock_guard<std::mutex> lk(tomb_mu_);
    remove();
    uint64_t& t = tombstones_[std::string(key)];
    t = std::max(t, version);
  }
  // Applies a snapshot record unless a tombstone at least as new exists; returns whether it ran.
  template <typename F>
  bool apply_snapshot(std::string_view key, uint64_t version, F apply) {
    std::lock_guard<std::mutex> lk(tomb_mu_);
    auto it = tombstones_.find(std::string(key));
    if (it != tombstones_.end() && it->second >= version) return false;
    apply();
    return true;
  }
  // True while this node keeps a copy that was complete once (it was in sync, then got excluded): the copy must
  // survive until a member in sync can replace it, and is the shard's data if no member is in sync any more.
  bool holds_copy() const { return holds_copy_.load(std::memory_order_acquire); }
  void set_holds_copy(bool v) { holds_copy_.store(v, std::memory_order_release); }
  // The view of the shard (ShardView::packed) this node was last in sync in: a copy kept from an older view may
  // lack what the newer primaries committed, so it is never the shard's data.
  uint64_t synced_view() const { return synced_view_.load(std::memory_order_acquire); }
  void set_synced_view(uint64_t v) { synced_view_.store(v, std::memory_order_release); }
  // Set when this node took a replicated write that did not commit (PbWorker::resync_for): a copy being made now
  // may keep it (a snapshot never overwrites a newer version), so the copy is made again from an empty table.
  void mark_dirty() { dirty_.store(true, std::memory_order_release); }
  bool take_dirty() { return dirty_.exchange(false, std::memory_order_acq_rel); }
  // What recovery is doing, for /readyz.
  std::string status() const {
    std::lock_guard<std::mutex> lk(status_mu_);
    return status_;
  }
  void set_status(std::string s) {
    std::lock_guard<std::mutex> lk(status_mu_);
    status_ = std::move(s);
  }

 private:
  std::atomic<bool> joining_{false};
  std::mutex tomb_mu_;
  std::unordered_map<std::string, uint64_t> tombstones_;
  std::atomic<bool> holds_copy_{false};
  std::atomic<bool> dirty_{false};
  std::atomic<uint64_t> synced_view_{0};
  mutable std::mutex status_mu_;
  std::string status_ = "starting";
};

class Recovery {
 public:
  Recovery(cluster::WorkerContext& ctx, RecoveryState& state, UndecidedWrites& undecided, rpc::MsgRange msgs)
      : ctx_(ctx), state_(state), undecided_(undecided), msgs_(msgs) {}
  // Registers the handlers.
  Status start();
  // The node's recovery loop (worker 0): recovers when not in sync, then watches for exclusion.
  rpc::Task<void> run();
  void tick();  // expires abandoned snapshot sessions

 private:
  struct ScanSession {
    TablePager pager;
    uint64_t absent_max = 0;  // largest version of the logically absent records skipped so far
  };

  struct PeerStatus {
    bool in_sync = false;
    bool holds_copy = false;  // not in sync, but keeps a copy that was complete once
    cluster::MemberState view_of_me = cluster::MemberState::kInSync;
    cluster::ShardView view;  // its view of the shard
  };
  uint32_t own_shard() const { return static_cast<uint32_t>(ctx_.topology().nodes[ctx_.self()].shard); }
  rpc::Task<void> recover();
  rpc::Task<bool> excluded_somewhere();
  void clear_local();
  void show_in_placeholder(std::string_view key, uint64_t version);
  rpc::Task<std::optional<PeerStatus>> status_of(uint16_t node);
  struct Joined {
    bool stopping = false;     // the node stops: recovery ends
    bool whole_shard = false;  // every other member of this node's shard answered: each sends it every new write
  };
  rpc::Task<Joined> announce_join();
  rpc::Task<bool> copy_from(uint16_t source);
  rpc::Task<void> wait_drained(rpc::ReplyTo to, uint64_t gen);
  void serve_scan(const rpc::Incoming& in);
  void serve_undecided(const rpc::Incoming& in);
  // After the records: the source's undecided writes (undecided.h), which the copy holds hidden as it does.
  rpc::Task<bool> copy_undecided(uint16_t source);

  cluster::WorkerContext& ctx_;
  RecoveryState& state_;
  UndecidedWrites& undecided_;
  rpc::MsgRange msgs_;
  CopySessions<ScanSession> scans_;
};

}  // namespace rdx::replication::primary_backup
