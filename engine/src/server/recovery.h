#pragma once
// Recovery of a restarted node: its memory is empty, so before it serves it copies its shard from a live replica.
// Every worker serves the handlers; worker 0 also drives the node's own recovery:
//  1. Ask the other members of the shard whether they are in sync. None is, and a majority (this node included)
//     answered: a fresh cluster, start empty. Some are: join.
//  2. Join: tell every other data node to include this node as a replica again (kJoining) and to wait until every
//     commit that chose its replicas before that (an older membership generation) has finished; from then on every
//     commit replicates to this node.
//  3. Copy the shard from an in-sync member (the primary if it is one) page by page; records carry versions, so a
//     copy never overwrites a newer replicated write, and deletes applied meanwhile leave tombstones so an older
//     copied record cannot resurrect a key.
//  4. In sync: serve, and tell the other nodes (kInSync).
//  5. Afterwards, once a second, ask every data node how it sees this node: if one excluded it (a connection broke,
//     so it may have missed writes), stop serving and recover again, keeping the local copy: it is dropped only
//     once a member in sync is there to copy from. If no member is in sync (e.g. two backups excluded each other
//     while the primary restarts), members that hold such a copy rejoin with it and the others wait for them;
//     "start empty" is only for a shard where no reachable member holds anything.
// A restarting primary copies from a backup: backups hold every committed write (commits replicate to backups
// before they are reported). Until a primary is in sync it refuses locks, so its shard is unavailable meanwhile.
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "rpc/rpc.h"
#include "server/node_shared.h"
#include "server/protocol.h"
#include "store/hashtable.h"

namespace rdx::server {

class Recovery {
 public:
  enum Msg : rpc::MsgType { kSyncStatus = 30, kJoin = 31, kJoinDone = 32, kSyncScan = 33 };

  explicit Recovery(WorkerContext& ctx) : ctx_(ctx) {}
  // Registers the handlers; with `drive`, also starts this node's recovery (if the node is not in sync).
  void start(bool drive);
  void tick();  // expires abandoned snapshot sessions

 private:
  struct ScanSession {
    uint64_t cursor = 0;
    bool store_done = false;
    std::deque<store::ScanItem> pending;
    std::chrono::steady_clock::time_point last_used;
  };

  struct PeerStatus {
    bool in_sync = false;
    bool holds_copy = false;  // not in sync, but keeps a copy that was complete once
    MemberState view_of_me = MemberState::kInSync;
  };
  rpc::Task<void> run();
  rpc::Task<void> recover();
  rpc::Task<bool> excluded_somewhere();
  void clear_local();
  rpc::Task<std::optional<PeerStatus>> status_of(uint16_t node);
  rpc::Task<bool> announce_join();
  rpc::Task<bool> copy_from(uint16_t source);
  rpc::Task<void> wait_drained(rpc::ReplyTo to, uint64_t gen);
  void serve_scan(const rpc::Incoming& in);
  std::vector<uint16_t> other_data_nodes() const;

  WorkerContext& ctx_;
  std::map<std::pair<uint16_t, uint64_t>, ScanSession> scans_;  // (joiner, session id)
};

}  // namespace rdx::server
