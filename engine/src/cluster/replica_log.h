#pragma once
// How a transaction protocol gets what it commits to a key's replicas: through the cluster's replication protocol,
// the only path by which any write reaches a replica (engine/src/replication/README.md, "Families and keys"). A
// replication protocol that can carry transactions implements this interface; the transaction family is built
// against it and never sends a write to a replica itself, so no key is ever replicated two ways.
//
// A commit uses it in this order (per-protocol choices in brackets):
//   auto scope = log.begin();                         the replica set is chosen from this membership generation
//   co_await log.replicate(scope, txid, W, mode)      [kApply: versions known, applied hidden at the backups;
//                                                      kHold: versions not known yet, held at the backups]
//   log.apply_at_primary(w) for each w, at the primary, while the transaction still holds w's lock
//   co_await log.resolve(scope, txid, W, committed)   kApply: makes W readable at the backups (commit only);
//                                                      kHold: applies W with its versions, or drops it (abort)
// `scope` must live until the writes are final everywhere: a member that joins waits for every scope of an older
// generation (a write that chose its replicas before the member joined must be in the snapshot it copies).
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster/local_reads.h"
#include "common/status.h"
#include "rpc/task.h"

namespace rdx::cluster {

struct LogWrite {
  std::string key;
  std::optional<std::string> value;  // nullopt: the write deletes the key
  uint64_t version = 0;              // the version the write creates (0 while unknown: kHold)
};

// A write of a transaction across shards that this node held hidden as a backup when it became its shard's primary
// (an election): nobody had decided it here. The node holds the key locked by the transaction (the value written, at
// `write.version`), as its participant would, until the transaction layer decides it (ReplicaLog::take_inherited).
struct InheritedWrite {
  uint64_t txid = 0;
  // Each shard's primary when the transaction wrote (its participants: they know its outcome). A shard's later
  // primary knows only what it inherited or decided itself.
  std::vector<uint16_t> participants;
  LogWrite write;                     // version: the one the write creates
  std::optional<std::string> before;  // the value it replaced (nullopt: the key was absent), restored by an abort
};

// What a node heard of a transaction across shards as a backup of its shard (the writes replicated to it): how a
// new primary answers for its predecessor about a transaction whose writes it did not inherit.
struct TxnHeard {
  enum class Kind : uint8_t {
    kNotKept,     // this protocol (or this node, while it copies its shard) keeps no such record
    kNothing,     // no write of it was replicated here, and any within `complete_for` would have been
    kShown,       // its writes were replicated here and shown: its coordinator committed them
    kReplicated,  // its writes were replicated here, not shown since (undecided, or decided by a later write)
  };
  Kind kind = Kind::kNotKept;
  std::chrono::milliseconds complete_for{0};  // kNothing: how far back this node heard every replicated write
};

enum class LogMode : uint8_t {
  kApply,  // applied at every live backup now, not readable there until resolve(committed)
  kHold,   // kept at every live backup (the keys read as busy there) until resolve applies or drops it
};

class ReplicaLog {
 public:
  // Keeps a write's membership generation registered until it is destroyed (movable, not copyable).
  class Scope {
   public:
    // The shards' views (ShardView::packed, by shard) when the write began, for a protocol with views: a write that
    // began under one primary must not be replicated under another.
    using Views = std::shared_ptr<const std::vector<uint64_t>>;
    Scope() = default;
    Scope(ReplicaLog* log, uint64_t gen, Views views = nullptr) : log_(log), gen_(gen), views_(std::move(views)) {}
    Scope(Scope&& o) noexcept : log_(std::exchange(o.log_, nullptr)), gen_(o.gen_), views_(std::move(o.views_)) {}
    Scope& operator=(Scope&& o) noexcept {
      if (this != &o) {
        release();
        log_ = std::exchange(o.log_, nullptr);
        gen_ = o.gen_;
        views_ = std::move(o.views_);
      }
      return *this;
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope() { release(); }
    uint64_t generation() const { return gen_; }
    const Views& views() const { return views_; }

   private:
    void release() {
      if (log_ != nullptr) log_->end(gen_);
      log_ = nullptr;
    }
    ReplicaLog* log_ = nullptr;
    uint64_t gen_ = 0;
    Views views_;
  };

  virtual ~ReplicaLog() = default;
  virtual Scope begin() = 0;
  // Sends W (keys of any shards) to every live replica other than each key's primary. A replica that does not
  // acknowledge is excluded by the replication protocol; the call then still succeeds with the others. kOk, or the
  // reason the writes could not be made durable (the transaction must then not commit).
  // (`writes` must outlive the call: callers await it.)
  virtual rpc::Task<Code> replicate(const Scope& scope, uint64_t txid, const std::vector<LogWrite>& writes,
                                    LogMode mode) = 0;
  // replicate() of a decision coordinator recovery made (its commit's writes, or its abort's rewrites) for transaction
  // `txid`: the backups also note that the transaction's writes reached them (TxnHeard::kReplicated).
  virtual rpc::Task<Code> replicate_recovered(const Scope& scope, uint64_t txid, const std::vector<LogWrite>& writes) {
    return replicate(scope, txid, writes, LogMode::kApply);
  }
  // Completes replicate() (see above). kApply notifies the replicas (one-way) and returns; kHold returns once every
  // live replica has applied or dropped the held writes.
  virtual rpc::Task<void> resolve(const Scope& scope, uint64_t txid, std::vector<LogWrite> writes, LogMode mode,
                                  bool committed) = 0;
  // At a key's primary, with the key locked by the writer: applies a committed write to the local table and to the
  // log feed read replicas subscribe to. A delete leaves an absent record that the lock's release removes.
  virtual void apply_at_primary(const LogWrite& w) = 0;
  // The committed value of one key (never a write in progress), linearizable with every write through this log.
  virtual rpc::Task<Read> read_committed(std::string key) = 0;
  // The writes this node inherited as a new primary (InheritedWrite) whose transactions this worker decides; each is
  // returned once. A decision goes through replicate and apply_at_primary like any other, then releases the lock.
  virtual std::vector<InheritedWrite> take_inherited() { return {}; }
  // What this node heard of transaction `txid` as a backup (TxnHeard).
  virtual TxnHeard heard(uint64_t /*txid*/) { return {}; }

 protected:
  virtual void end(uint64_t gen) = 0;
};

}  // namespace rdx::cluster
