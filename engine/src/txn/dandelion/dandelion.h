#pragma once
// Dandelion's commit protocols (the Dandelion seed, Table 4): configurations of one skeleton of four steps (lock,
// validate, replicate, unlock), with the replication step through the cluster's replica log:
//   dnl4  lock W at primaries, validate R, replicate W (applied hidden at backups), unlock (applying W); reported
//         after the unlock acks
//   dnl2  lock R+W at primaries with version checks, replicate W to the backups and apply it at the primaries;
//         reported after that, unlocked afterwards
//   dnl1  lock R+W at primaries (W logged with the locks) and hold W at the backups in the same round trip;
//         reported after it; applied at unlock, and at the backups when the hold is resolved
//   dnl-ro read-only transactions under every protocol: validate R at primaries only
// Execution reads are OCC's (txn/reads.h: the latest value, locally when a copy is here). Every phase runs over RPC.
//
// Coordinator recovery (recovery.cc): a participant whose coordinator is lost while it holds a transaction's locks
// asks every participant what it knows, which fences them (the coordinator's later apply and unlock are refused),
// and all decide alike from those answers: commit if any participant committed or the protocol's report point was
// reached (dnl2: a participant applied; dnl1: every participant locked all it was asked), else abort.
// Each participant then applies the decision to its own keys through the replica log.
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "txn/cc.h"
#include "txn/dandelion/participant.h"
#include "txn/reads.h"

namespace rdx::txn::dandelion {

struct CommitSteps {
  bool lock_reads;           // read set locked (with version checks) instead of validated
  bool hold_at_backups;      // W held at backups with the locks (kHold), applied when resolved
  bool validate;             // separate read validation step
  bool replicate;            // W replicated to backups after locking (kApply)
  bool apply_in_replicate;   // W applied at primaries in the replication step (else at unlock)
  bool report_after_unlock;  // wait for unlock acks before reporting commit
  // 2PL (NOWAIT, WAITDIE: txn/twopl/): each execution read locks its key at the primary and reads it under the lock
  // (one round trip), and the locks are held until the transaction ends; the commit then needs no validation.
  bool lock_at_read = false;
  bool wait_die = false;  // a read that meets a younger holder waits for it; else (and always without) it aborts
};

// A commit at a timestamp (MVCC's start timestamp, txn/mvcc/; SUNDIAL's chosen one, txn/sundial/): the lock batches
// carry it (the primaries' VersionHooks admit each written key only after its read and write timestamps) and so do
// the validation batches (SUNDIAL renews the reads' leases up to it, MVCC its one-sided reads). Reads in `covered`
// (MVCC: every read its primary served, checked then; SUNDIAL: those whose leases reach `ts` already) are not
// validated, unless written.
struct CommitTs {
  int64_t ts = 0;
  bool covers_every_read = false;  // (MVCC: saves copying every read key into `covered`)
  std::set<std::string> covered;
  bool covers(const std::string& key) const { return covers_every_read || covered.count(key) != 0; }
};

std::unique_ptr<ConcurrencyControl> make_dnl4(const CcEnv& env);
std::unique_ptr<ConcurrencyControl> make_dnl2(const CcEnv& env);
std::unique_ptr<ConcurrencyControl> make_dnl1(const CcEnv& env);

class Dandelion final : public ConcurrencyControl {
 public:
  // `hooks` (MVCC): the primary's timestamp checks and version records, called by this worker's participant.
  Dandelion(const CcEnv& env, CommitSteps steps, VersionHooks* hooks = nullptr)
      : env_(env), steps_(steps), participant_(env.ctx, env.log, hooks) {}
  Status start() override;
  rpc::Task<Read> read(TxState& tx, const std::string& key) override;
  rpc::Task<Outcome> commit(TxState& tx) override { return commit_at(tx, nullptr); }
  // The commit, at `at` when given (it must outlive the commit).
  rpc::Task<Outcome> commit_at(TxState& tx, const CommitTs* at);
  // Releases what the execution reads locked (2PL; nothing is locked before commit otherwise).
  void abort(TxState& tx) override;

 private:
  using StepResult = std::pair<Code, std::vector<ItemResult>>;
  // One step at one node: a direct call for this node, else an RPC.
  rpc::Task<StepResult> step(uint16_t node, Msg type, Batch batch);
  // (`ts`: the validation batches' timestamp, 0 for none.)
  rpc::Task<Outcome> validate_reads(const TxState& tx, const std::map<std::string, uint64_t>& checks, int64_t ts);
  // The participants that did not release (a fenced one refuses: a recovery decides there), if any.
  rpc::Task<std::vector<uint16_t>> unlock_all(std::map<uint16_t, Batch> unlocks);
  rpc::Task<std::vector<cluster::LogWrite>> decided_alike(uint64_t txid, std::vector<uint16_t> refused,
                                                          std::vector<cluster::LogWrite> writes, bool committed,
                                                          Outcome* told);
  rpc::Task<Outcome> outcome_from(uint16_t node, uint64_t txid);
  rpc::Task<void> finish(cluster::ReplicaLog::Scope scope, std::map<uint16_t, Batch> unlocks, uint64_t txid,
                         std::vector<cluster::LogWrite> writes, cluster::LogMode mode, bool committed);
  uint16_t primary_of(std::string_view key) const { return cluster::primary_of(env_.ctx, key); }
  // Whether `key` belongs to this node's shard (a lock or validation request for any other key is refused).
  bool owns(std::string_view key) const { return cluster::is_replica_of(env_.ctx.topology(), env_.ctx.self(), key); }
  // Locks or validates `b` here as its keys' primary; nullopt (and no lock kept) unless this node still served as
  // the primary when it was done (a deposed primary's locks and versions protect nothing).
  std::optional<std::vector<ItemResult>> as_primary(Msg type, const Batch& b);

  // 2PL (execution_locks.cc).
  bool locks_reads() const { return steps_.lock_at_read && !env_.options.validation_off; }
  rpc::Task<std::optional<LockReadResult>> lock_read_at(uint16_t node, const LockRead& l);
  // lock_read here as the key's primary; nullopt (and nothing kept) unless this node still served as the primary.
  std::optional<LockReadResult> lock_read_as_primary(const LockRead& l);
  void serve_lock_read(const rpc::Incoming& in);
  void release_reads(const TxState& tx);

  // This worker's oldest commit not finished at every participant (lock batches carry it: Batch::watermark).
  uint64_t watermark() const { return inflight_.empty() ? 0 : *inflight_.begin(); }
  void done(uint64_t txid, bool everywhere);
  // Test only (TxnTestFaults::crash_point): whether this commit is the one to crash at `at`; the crash (SIGKILL).
  bool crash_due(CrashPoint at, size_t lock_nodes);
  [[noreturn]] void crash(uint64_t txid);

  // recovery.cc
  rpc::Task<void> recovery_loop();
  // Takes the writes this node inherited as a new primary (cluster::InheritedWrite) into the participant: before any
  // answer about a transaction, so that none is answered "unknown" while its inherited write waits to be taken.
  void adopt_inherited();
  bool coordinator_lost(uint64_t txid, const Pending& p, Participant::Clock::time_point now);
  rpc::Task<void> recover(uint64_t txid);
  // This node's answer as its shard's primary: its participant's, else what it heard as a backup (a successor's).
  Answer answer(uint64_t txid);
  rpc::Task<std::optional<Answer>> ask(uint16_t node, uint64_t txid);  // nullopt: no answer
  // Asks the participants; commit or abort, or nullopt while some answer is missing or they do not tell. `locked_at`:
  // when this participant locked for the transaction. `seen`: the answers, for logs.
  rpc::Task<std::optional<bool>> decide(uint64_t txid, std::vector<uint16_t> participants,
                                        Participant::Clock::time_point locked_at, std::string* seen);
  // Applies the decision to this participant's items of `txid` through the replica log; false if it could not.
  rpc::Task<bool> settle(uint64_t txid, bool commit);
  void serve_query(const rpc::Incoming& in);

  CcEnv env_;
  CommitSteps steps_;
  Participant participant_;
  std::set<uint64_t> inflight_;  // commits of this worker that hold or may hold locks somewhere
  // Commits some participant did not release, kept in inflight_ until the time given (done()), oldest first.
  std::deque<std::pair<std::chrono::steady_clock::time_point, uint64_t>> retained_;
  void forget_retained(std::chrono::steady_clock::time_point now);
  uint32_t crash_countdown_ = 0;
};

}  // namespace rdx::txn::dandelion
