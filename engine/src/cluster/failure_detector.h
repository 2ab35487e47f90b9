#pragma once
// Failure detection inside the engine: every data node heartbeats every other data node over the transport (worker
// 0 sends, any worker answers). An answer is a lease (leases.h); a node that stops answering for the timeout is
// suspected, and the replication protocol decides what that means (primary-backup excludes a backup). An answer
// "you are excluded" tells a node at once that it may have missed writes (Membership::note_excluded).
//
// Timing (topology failure_detection): heartbeats every heartbeat_ms, suspicion and lease after timeout_ms. A backup
// that is paused loses its leases within timeout_ms and serves no read from its copy until it holds them again; a
// member excluding it waits until the lease it granted has ended (exclude_after_lease).
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "cluster/worker_context.h"
#include "rpc/task.h"

namespace rdx::cluster {

inline constexpr rpc::MsgType kHeartbeat = 64;  // msgs::kCluster.at(0)
// A newer epoch's topology file, handed to a node that runs an older one (one-way), and asked for by a node that
// learned it runs an older one (server/worker.cc sends and serves both).
inline constexpr rpc::MsgType kTopologyPush = 65;  // msgs::kCluster.at(1)
inline constexpr rpc::MsgType kTopologyPull = 66;  // msgs::kCluster.at(2)

class FailureDetector {
 public:
  // What the detector tells its worker (on the worker's thread).
  struct Hooks {
    std::function<void(uint16_t)> on_suspect;     // the node has not answered for the timeout (once per silence)
    std::function<void(uint16_t)> on_older_peer;  // the node runs an older topology epoch (its heartbeat or answer)
    std::function<void(uint16_t)> on_newer_peer;  // the node runs a newer epoch, one without this node (its answer)
  };
  FailureDetector(WorkerContext& ctx, Hooks hooks);
  // Registers the heartbeat handler (every worker: a heartbeat is answered wherever it lands).
  Status start();
  // Worker 0: heartbeats until the node stops.
  rpc::Task<void> run();
  // `node` left the cluster (a new epoch removed it): nothing is suspected of it, and if it comes back it starts
  // as a node never heard.
  void forget(uint16_t node);

 private:
  struct Peer {
    uint16_t node = 0;
    bool outstanding = false;  // one heartbeat at a time per peer
    bool answered = false;     // it answered once: only then does its silence mean something
    bool suspected = false;
    std::chrono::steady_clock::time_point last_answer;
  };
  rpc::Task<void> beat(Peer& p, transport::ConnId conn);
  void serve(const rpc::Incoming& in);
  // A heartbeat's answer names the answerer's view of its shard: installs it here when newer.
  void learn_view(uint16_t from, std::span<const std::byte> payload);

  WorkerContext& ctx_;
  Hooks hooks_;
  std::vector<Peer> peers_;  // by node id, never resized (beats in flight refer to their Peer)
};

// Excludes `node` (marks it kFailed, so this node stops counting it as a replica) once no lease this node granted
// it lasts any more, so it no longer serves reads from its copy: no new grants, then wait for the last one to end.
// False when the exclusion was abandoned: `node` rejoined meanwhile (its join waits for the writes that failed at
// it, recovery.h), or it was excluded already.
rpc::Task<bool> exclude_after_lease(WorkerContext& ctx, uint16_t node);

}  // namespace rdx::cluster
