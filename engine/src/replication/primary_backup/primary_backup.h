#pragma once
// Primary-backup replication (the first member of a shard is its primary, the others its backups):
//  - Single-key writes execute at the key's primary, which orders them: a writer takes the key's turn (KeyTurns),
//    locks the record (waiting while a transaction holds it), evaluates its Rmw on the current value, sends the
//    result to every live backup (applied hidden there), applies it, unlocks, and lets the backups show it. A write
//    from any node is forwarded to the primary; it never fails because of contention.
//  - Reads are answered by this node when it holds a readable copy (the primary, or a backup with local backup
//    reads on), else by the primary; a key held by a writer is read again until it is free.
//  - Transactions replicate through the same path (ReplicaLog: kApply and kHold, replica.cc).
//  - A backup that does not acknowledge, or that the failure detector suspects, is excluded by the node that saw it
//    fail and, before that node writes without it, by every other data node that answers, a majority of the data
//    nodes with it (agreed exclusion), each once the lease it granted the backup has ended (so it no longer reads its
//    own copy, cluster/leases.h); it notices (recovery.h), copies its shard again and rejoins.
//  - A primary that the members of its shard lose is replaced (election.cc): an in-sync backup collects the votes of
//    a majority of the data nodes, each given only after the voter excluded the old primary and waited out the lease
//    it granted it, so the old primary, which answers and commits only while it holds leases from a majority
//    (cluster::serves_as_primary), has stopped before the new one starts. Views number the primaries of a shard;
//    replicated writes carry the sender's view and a backup in another view refuses them.
// Survives: the loss of a minority of the data nodes, the primary included.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "replication/key_turns.h"
#include "replication/primary_backup/messages.h"
#include "replication/primary_backup/recovery.h"
#include "replication/primary_backup/undecided.h"
#include "replication/replication.h"

namespace rdx::replication::primary_backup {

std::unique_ptr<ReplicationNode> make_node(const NodeEnv& env);

// State the workers of one node share.
class PbNode final : public ReplicationNode {
 public:
  explicit PbNode(const NodeEnv& env) : env_(env) {}
  std::unique_ptr<ReplicationProtocol> make_worker(cluster::WorkerContext& ctx) override;
  cluster::LogFeed& log_feed() override { return feed_; }
  std::string recovery_state() const override;

  const NodeEnv& env() const { return env_; }
  RecoveryState& recovery() { return recovery_; }
  KeyTickets& key_tickets() { return key_tickets_; }
  UndecidedWrites& undecided() { return undecided_; }
  // TestFaults::failed_replicate_keeps_writes: true once per node, for the first replicate it applies to.
  bool take_planted_replicate_failure() {
    return env_.faults.failed_replicate_keeps_writes && !planted_failure_taken_.exchange(true);
  }

 private:
  NodeEnv env_;
  std::atomic<bool> planted_failure_taken_{false};
  cluster::LogFeed feed_;
  RecoveryState recovery_;
  KeyTickets key_tickets_;
  UndecidedWrites undecided_;
};

class PbWorker final : public ReplicationProtocol, public cluster::ReplicaLog {
 public:
  PbWorker(PbNode& node, cluster::WorkerContext& ctx);

  // ReplicationProtocol
  Status start() override;
  rpc::Task<cluster::KvResult> get(std::string key) override;
  rpc::Task<WriteResult> write(std::string key, Rmw op) override;
  rpc::Task<void> recover() override { return recovery_.run(); }
  void on_peer_lost(uint16_t node) override;
  void on_peer_back(uint16_t node) override;
  void on_membership_change() override;
  void on_topology_change() override;
  void tick() override;  // handover.cc
  cluster::ReplicaLog* replica_log() override { return this; }

  // ReplicaLog
  Scope begin() override;
  rpc::Task<Code> replicate(const Scope& scope, uint64_t txid, const std::vector<cluster::LogWrite>& writes,
                            cluster::LogMode mode) override;
  rpc::Task<Code> replicate_recovered(const Scope& scope, uint64_t txid,
                                      const std::vector<cluster::LogWrite>& writes) override;
  rpc::Task<void> resolve(const Scope& scope, uint64_t txid, std::vector<cluster::LogWrite> writes,
                          cluster::LogMode mode, bool committed) override;
  void apply_at_primary(const cluster::LogWrite& w) override;
  rpc::Task<cluster::Read> read_committed(std::string key) override;
  std::vector<cluster::InheritedWrite> take_inherited() override;
  cluster::TxnHeard heard(uint64_t txid) override;

 protected:
  void end(uint64_t gen) override;

 private:
  // single_key.cc
  rpc::Task<WriteResult> write_at_primary(std::string key, Rmw op);
  rpc::Task<WriteResult> write_locked(const std::string& key, const Rmw& op, Scope scope);
  rpc::Task<cluster::KvResult> read_once(const std::string& key, bool* busy);
  void serve_get(const rpc::Incoming& in);
  void serve_write(const rpc::Incoming& in);

  // replica.cc: what a backup does with what it receives.
  void apply_hidden(const LogBatch& b);
  void note_undecided(const LogBatch& b, const cluster::LogWrite& w);  // (undecided.h)
  void hold(const LogBatch& b);
  void resolve_held(const LogBatch& b);
  void make_readable(const LogBatch& b);
  // Shows a hidden write of `key`: the one of `version` (a readable notice), or whichever the record holds (a new
  // primary's takeover). Whether it was shown.
  bool show_write(const std::string& key, std::optional<uint64_t> version);
  // Drops one hold of `key`; when it was the last, the record shows its newest write (or goes, if deleted).
  void release_hold(const std::string& key);
  void remove_final(const std::string& key, uint64_t version);
  rpc::Task<std::optional<transport::ConnId>> connection_to(uint16_t node);
  // Stops counting `node` as a replica once the lease this node granted it has ended (cluster/leases.h) and a
  // majority of the data nodes excluded it (agreed exclusion, primary_backup.cc). Whether it is excluded.
  rpc::Task<bool> exclude(uint16_t node, std::string why);
  rpc::Task<size_t> announce_exclusion(uint16_t node);  // how many other data nodes confirmed
  void serve_excluded(const rpc::Incoming& in);
  // Catches up with Membership's generation now (on_membership_change), not at the worker's next iteration.
  void refresh_membership();
  // The writes of `writes` each backup must get, by node: the live backups of their shards, and for a resolve
  // (`since`: the replicate's scope) the primary of a shard whose view changed since (a backup then, it holds them).
  rpc::Task<Code> replicate_as(const Scope& scope, uint64_t txid, const std::vector<cluster::LogWrite>& writes,
                               cluster::LogMode mode, bool recovered);
  std::vector<uint16_t> participants_of(const Scope& scope, const std::vector<cluster::LogWrite>& writes,
                                        cluster::LogMode mode) const;
  std::map<uint16_t, LogBatch> by_backup(uint64_t txid, const std::vector<cluster::LogWrite>& writes,
                                         cluster::LogMode mode, const Scope* since = nullptr) const;
  // Whether `node` has the batch now, or no longer counts (excluded): the write may proceed without it.
  rpc::Task<bool> send_to(uint16_t node, uint16_t msg, LogBatch batch);
  void serve_replicate(const rpc::Incoming& in);
  // A write this node took in `view` (of its own shard) did not commit: it stops serving and copies its shard again
  // (recovery.h), keeping its copy until a source is there; unless the shard moved to a newer view since (the
  // election settled the write: its winner showed it, every other member copies again).
  void resync_for(uint64_t view, std::string_view why);

  // election.cc: a new primary when this node's shard lost its own.
  rpc::Task<void> elect(uint16_t deposed);
  rpc::Task<bool> campaign(uint32_t shard, uint64_t view, uint16_t deposed);
  rpc::Task<bool> cut_off(uint16_t old);
  void serve_vote(const rpc::Incoming& in);
  void serve_new_view(const rpc::Incoming& in);
  void withdraw(uint32_t shard, uint64_t view);  // a lost campaign (election.cc)
  void serve_withdraw(const rpc::Incoming& in);
  // The new primary shows the writes its predecessor left hidden here (each reached every replica then counted),
  // but for the undecided writes of transactions across shards, which it locks for their transactions and hands to
  // the transaction layer (undecided.h): the coordinator may have aborted them at the other shards.
  void show_hidden_writes();
  // Locks each undecided write the record still holds hidden for its transaction: those it returns are inherited.
  std::vector<cluster::InheritedWrite> lock_undecided();

  // handover.cc: a primary asked to stop (Node::hand_over) resigns and has another member elected first.
  rpc::Task<void> hand_over();
  void serve_resign(const rpc::Incoming& in);

  PbNode& node_;
  cluster::WorkerContext& ctx_;
  rpc::MsgRange msgs_;
  KeyTurns turns_;
  Recovery recovery_;
  std::multiset<uint64_t> active_gens_;  // membership generations of the writes this worker coordinates
  std::unordered_map<uint64_t, std::vector<cluster::LogWrite>> held_;  // kHold writes by transaction (backup side)
  std::vector<std::vector<uint16_t>> backups_;  // per shard: members that receive its writes (see on_membership_change)
  Scope::Views views_;                          // per shard: the views backups_ was computed in
  uint64_t seen_generation_ = 0;
  bool electing_ = false;  // worker 0: an election is running
};

}  // namespace rdx::replication::primary_backup
