#pragma once
// The transaction service of one worker: coordinator of the transactions it begins (Dandelion's TxCtx + commit
// skeleton) and participant for transactions coordinated elsewhere. Protocols are configurations of the skeleton's
// four steps (lock, validate, replicate, unlock), Table 4 of Dandelion:
//   dnl4  lock W at primaries, validate R, replicate W to backups, unlock; commit reported after the unlock acks
//   dnl2  lock R+W at primaries (with version checks), replicate W to primaries and backups; reported after that
//   dnl1  lock R+W at primaries and backups, writes logged with the locks; reported after the lock acks
//   dnl-ro read-only transactions under every protocol: validate R at primaries only
// Locality switches: hashtable batching (local reads of one loop iteration go to the table as one prefetched batch),
// strongly consistent reads from a local backup, and network batching (the RPC layer's, from the topology).
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "common/histogram.h"
#include "server/protocol.h"
#include "txn/history.h"
#include "txn/messages.h"
#include "txn/participant.h"
#include "txn/txn.h"

namespace rdx::txn {

struct CommitSteps {
  const char* name;
  bool lock_reads;           // read set locked (with version checks) instead of validated
  bool lock_backups;         // locks taken at backups too, writes logged with them
  bool validate;             // separate read validation step
  bool replicate_backups;    // writes applied at backups (undo-logged, not readable until committed)
  bool replicate_primaries;  // writes applied at primaries in the replication step
  bool report_after_unlock;  // wait for unlock acks before reporting commit
};
// dnl4, dnl2, dnl1; kUnsupported names the protocols this rdxd implements.
Result<CommitSteps> find_commit_protocol(const std::string& name);

struct TxnConfig {
  CommitSteps steps;
  bool local_backup_reads = true;
  bool ht_batching = true;
  bool record_history = false;
  bool validation_off = false;  // test-only: skips read validation (a planted anomaly the checker must catch)
};

struct TxnTypeStats {
  uint64_t committed = 0, aborted = 0, unavailable = 0;
  Histogram latency;  // ns, committed attempts
};

struct TxnStats {
  std::map<std::string, TxnTypeStats> by_type;
  uint64_t local_reads = 0, remote_reads = 0, local_backup_reads = 0;
  uint64_t ht_batches = 0, ht_batched_reads = 0;
  uint64_t read_only_commits = 0;
};

class Tx;

class TxnServiceImpl final : public TxnService {
 public:
  TxnServiceImpl(server::WorkerContext& ctx, TxnConfig cfg);
  ~TxnServiceImpl() override;
  void start();

  std::unique_ptr<Transaction> begin() override;
  rpc::Task<Read> get_one(std::string key) override;
  rpc::Task<WriteResult> put_one(std::string key, std::string value) override;
  rpc::Task<WriteResult> remove_one(std::string key) override;

  // Worker loop hook: executes the batched local hashtable reads of this iteration. Returns how many ran.
  size_t run_batch();

  const TxnStats& stats() const { return stats_; }
  const ParticipantStats& participant_stats() const { return participant_.stats(); }
  const TxnConfig& config() const { return cfg_; }
  void set_config(const TxnConfig& cfg) { cfg_ = cfg; }
  // Finished transactions when cfg.record_history is on; the caller takes them.
  std::vector<TxRecord> take_history() { return std::move(history_); }
  void reset_stats() { stats_ = TxnStats{}; }

 private:
  friend class Tx;
  struct PendingRead;  // a local read waiting for the batch
  class ReadAwaiter;

  uint64_t next_txid();
  uint16_t primary_of(std::string_view key) const;
  // Where an execution-phase read of `key` runs: this node if it holds a usable replica, else the primary.
  bool read_locally(std::string_view key, bool* at_backup) const;
  std::vector<uint16_t> live_backups(std::string_view key) const;
  rpc::Task<Read> execute_read(std::string key, bool one);
  ReadAwaiter local_read(std::string key, bool one);
  rpc::Task<Read> remote_read(uint16_t node, std::string key, bool one);
  rpc::Task<Outcome> commit(Tx& tx);
  // One step at one node: a direct call for this node, else an RPC. nullopt + code on failure.
  rpc::Task<std::pair<Code, std::vector<ItemResult>>> step(uint16_t node, rpc::MsgType type, Batch batch);
  rpc::Task<void> finish_unlocks(std::map<uint16_t, Batch> unlocks, std::map<uint16_t, Batch> readable);
  void mark_failed(uint16_t node, Code why);
  rpc::Task<std::optional<transport::ConnId>> connection_to(uint16_t node);
  rpc::Task<void> backoff(int attempt);
  void record(Tx& tx, bool committed, const std::map<std::string, uint64_t>& new_versions);
  void serve_read(const rpc::Incoming& in, bool one);
  void commit_started(uint64_t gen);
  void commit_finished(uint64_t gen);

  server::WorkerContext& ctx_;
  TxnConfig cfg_;
  Participant participant_;
  uint32_t seq_ = 0;
  std::vector<std::unique_ptr<PendingRead>> batch_;
  std::vector<TxRecord> history_;
  std::multiset<uint64_t> active_gens_;  // membership generations of the commits running on this worker
  TxnStats stats_;
  std::mt19937_64 rng_;
};

}  // namespace rdx::txn
