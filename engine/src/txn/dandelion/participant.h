#pragma once
// The primary's side of Dandelion's commit protocols: what a key's primary does with its records when a coordinator
// asks it to lock, validate, apply (dnl2) or unlock. The same functions serve RPCs from remote coordinators and
// direct calls from coordinators on this node (no message to ourselves).
//
// Record locks (cluster/record_locks.h) are no-wait: a second locker fails and its transaction aborts. A write is
// applied through the cluster's replica log (ReplicaLog::apply_at_primary), which also feeds the node's log; what
// reaches the backups is the coordinator's business, through the same log.
//
// For coordinator recovery (recovery.cc) a participant keeps, per transaction it holds locks of, what it locked with
// the values to write and the other participants (Pending), and remembers outcomes a recovery may ask about: commits
// of transactions with several participants (until the coordinator's watermark passes them), and every outcome a
// recovery decided or fenced (a fenced transaction's later messages from its coordinator are refused).
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/replica_log.h"
#include "cluster/worker_context.h"
#include "txn/dandelion/messages.h"

namespace rdx::txn::dandelion {

// What a timestamp-ordered protocol (MVCC, txn/mvcc/; SUNDIAL, txn/sundial/) adds at a key's primary to the lock-based
// commit: a check of each written key when it is locked, and a record of the version each commit installs. Null for the
// others.
class VersionHooks {
 public:
  virtual ~VersionHooks() = default;
  // `key` was just locked for `txid` (timestamp `ts`, txid breaking ties): false refuses the write (a reader or
  // writer with a larger timestamp came first), and the caller releases the lock.
  virtual bool admit(cluster::WorkerContext& ctx, std::string_view key, uint64_t txid, int64_t ts) = 0;
  // The committed write of `key` by `txid` (still locked): `apply` applies it to the store.
  virtual void install(cluster::WorkerContext& ctx, std::string_view key, uint64_t txid, int64_t ts,
                       const std::function<void()>& apply) = 0;
  // A read of `key` at `version` that validation found unchanged and not held by another, in a validation batch
  // with a timestamp (SUNDIAL: the lease is renewed up to `ts`): false fails the validation.
  virtual bool renew(cluster::WorkerContext& /*ctx*/, std::string_view /*key*/, uint64_t /*txid*/, uint64_t /*version*/,
                     int64_t /*ts*/) {
    return true;
  }
};

struct ParticipantStats {
  uint64_t locks = 0, lock_conflicts = 0, validations = 0, validation_failures = 0;
};

// A transaction's locks at this participant, while its coordinator has not released them.
struct Pending {
  std::vector<Item> items;  // the items locked here; version: the key's version when locked; writes carry values
  std::vector<uint16_t> participants;
  bool all_locked = true;  // false: some item of the lock batch failed (the coordinator must abort)
  bool applied = false;    // dnl2: applied under the locks (a commit unlock of its writes is refused until then)
  bool fenced = false;     // a recovery asked: the coordinator's apply and unlock are refused from now on
  bool recovering = false;
  // A recovery's decision (commit?), answered from then on though its writes are not applied yet: a participant that
  // asks meanwhile must not decide otherwise from a "locked" answer.
  std::optional<bool> decision;
  uint64_t priority = 0;  // 2PL (WAITDIE): the transaction's timestamp, told to those its locks turn away
  int64_t ts = 0;         // MVCC: the lock batch's timestamp (Batch::ts), its writes' version timestamp
  // Writes this node inherited as a new primary (cluster::InheritedWrite), by key: the value each replaced, which an
  // abort restores (the record holds the inherited write).
  std::map<std::string, std::optional<std::string>> before;
  std::chrono::steady_clock::time_point since;
};

class Participant {
 public:
  using Clock = std::chrono::steady_clock;
  Participant(cluster::WorkerContext& ctx, cluster::ReplicaLog& log, VersionHooks* hooks = nullptr)
      : ctx_(ctx), log_(log), hooks_(hooks) {}

  // Locks a batch's items. A transaction that locked keys here already (2PL's execution reads) adds to them: items
  // it holds are not locked again (their version check is against what it read).
  std::vector<ItemResult> lock(const Batch& b);
  // 2PL's execution read: locks the key (no wait) and reads it under the lock.
  LockReadResult lock_read(const LockRead& l);
  std::vector<ItemResult> validate(const Batch& b);
  // dnl2: applies the writes while the transaction holds their locks. False (nothing done) when a recovery fenced it
  // or it holds no locks here.
  bool apply(const Batch& b);
  // False (nothing done) when a recovery fenced the transaction, or when it commits writes whose apply step (dnl2)
  // did not apply them here (the transaction is then fenced: a recovery decides it).
  bool unlock(const Batch& b);
  // Releases the locks of `b`'s items that were taken (after as_primary found this node deposed).
  void release_taken(const Batch& b, const std::vector<ItemResult>& results);

  // Coordinator recovery (recovery.cc).
  // Takes over a write this node inherited as a new primary, locked for its transaction: a pending transaction whose
  // coordinator counts as lost (fenced: its messages went to the old primary), so a recovery decides it.
  void inherit(const cluster::InheritedWrite& w);
  // What this participant knows of `txid`; fences it (the coordinator's later messages are refused).
  TxnState query(uint64_t txid);
  std::unordered_map<uint64_t, Pending>& pending() { return pending_; }
  // Ends `txid` here as a recovery decided (its writes applied or rewritten by the caller) and remembers it.
  void finish_recovered(uint64_t txid, bool committed);
  // Drops remembered outcomes past their retention (and what a deposed primary held: its locks are gone).
  void expire(Clock::time_point now);

  const ParticipantStats& stats() const { return stats_; }

 private:
  ItemResult lock_one(uint64_t txid, const Item& it);
  // An item of a lock batch whose key the transaction holds already: recorded as the batch says; kChanged (and
  // released) when its version check fails.
  ItemResult lock_held(uint64_t txid, Item& held, const Item& it);
  // The priority of the transaction holding `key` (0 when it is not one of this participant's).
  uint64_t holder_priority(std::string_view key);
  ItemResult validate_one(uint64_t txid, const Item& it);
  void unlock_one(uint64_t txid, const Item& it, bool commit, const Pending* pending);
  // Whether unlock batch `b` commits a write `pending` holds without applying it (no kApplyAtUnlock): one whose
  // apply was a step of its own.
  static bool commits_unapplied_write(const Batch& b, const Pending& pending);
  // The value write `it` logged with its lock (`pending`); false when there is none.
  static bool logged_value(const Item& it, const Pending* pending, std::optional<std::string>* value);
  bool settled_by_recovery(uint64_t txid, std::unordered_map<uint64_t, Pending>::iterator p) const;
  void remember(uint64_t txid, TxnState s);
  const TxnState* remembered(uint64_t txid) const;

  cluster::WorkerContext& ctx_;
  cluster::ReplicaLog& log_;
  VersionHooks* hooks_;
  std::unordered_map<uint64_t, Pending> pending_;
  struct Outcome {
    TxnState state;
    Clock::time_point at;
  };
  // By coordinator worker (cluster::writer_origin), then txid: ordered, so a watermark trims a prefix.
  std::map<uint64_t, std::map<uint64_t, Outcome>> outcomes_;
  ParticipantStats stats_;
};

// Outcomes are kept at most this long: a participant still holding a transaction's locks asks its peers within a
// few failure timeouts of losing the coordinator (recovery.cc), far sooner.
inline constexpr std::chrono::seconds kOutcomeRetention{60};

}  // namespace rdx::txn::dandelion
