#pragma once
// The primary's side of Dandelion's commit protocols: what a key's primary does with its records when a coordinator
// asks it to lock, validate, apply (dnl2) or unlock. The same functions serve RPCs from remote coordinators and
// direct calls from coordinators on this node (no message to ourselves).
//
// Record locks (cluster/record_locks.h) are no-wait: a second locker fails and its transaction aborts. A write is
// applied through the cluster's replica log (ReplicaLog::apply_at_primary), which also feeds the node's log; what
// reaches the backups is the coordinator's business, through the same log.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/replica_log.h"
#include "cluster/worker_context.h"
#include "txn/dandelion/messages.h"

namespace rdx::txn::dandelion {

struct ParticipantStats {
  uint64_t locks = 0, lock_conflicts = 0, validations = 0, validation_failures = 0;
};

class Participant {
 public:
  Participant(cluster::WorkerContext& ctx, cluster::ReplicaLog& log) : ctx_(ctx), log_(log) {}

  std::vector<ItemResult> lock(const Batch& b);
  std::vector<ItemResult> validate(const Batch& b);
  // dnl2: applies the writes while the transaction holds their locks.
  std::vector<ItemResult> apply(const Batch& b);
  void unlock(const Batch& b);

  const ParticipantStats& stats() const { return stats_; }

 private:
  ItemResult lock_one(uint64_t txid, const Item& it);
  ItemResult validate_one(uint64_t txid, const Item& it);
  void unlock_one(uint64_t txid, const Item& it, bool commit);

  cluster::WorkerContext& ctx_;
  cluster::ReplicaLog& log_;
  std::unordered_map<uint64_t, std::vector<Item>> logged_;  // writes logged with their lock (dnl1), by transaction
  ParticipantStats stats_;
};

}  // namespace rdx::txn::dandelion
