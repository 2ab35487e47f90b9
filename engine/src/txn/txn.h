#pragma once
// The transaction API (Dandelion's TxCtx, as coroutines). A Transaction executes reads during its execution phase
// and buffers every write (its TxCache); commit() runs the cluster's concurrency-control protocol (txn/cc.h), whose
// writes reach the replicas through the cluster's replication protocol (cluster/replica_log.h). Many transactions
// are in flight per worker: each is a coroutine; reads of one transaction may run concurrently
// (rpc::when_all over get()).
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "cluster/local_reads.h"
#include "common/status.h"
#include "rpc/task.h"

namespace rdx::txn {

enum class Outcome : uint8_t {
  kCommitted,
  kAborted,  // conflict or failed validation (including an expect() that no longer holds): nothing applied
  // A replica or primary could not be reached. Usually nothing was applied (a read failed, a lock or validation did
  // not answer: recovery aborts). When the commit had already replicated its writes (or, dnl1, held them at the
  // backups with every lock it asked for), it may or may not have taken effect: Transaction::outcome_unknown() says
  // which, and histories record such a transaction as unknown.
  kUnavailable,
};
const char* outcome_name(Outcome o);

// A read: kOk (value, version) or kNotFound; kUnavailable (or kTimeout) when a replica could not be reached.
using Read = cluster::Read;

// The keys a transaction will touch, when the caller knows them before it starts (Redis' MULTI/EXEC queues its
// commands before EXEC). Deterministic protocols order transactions by them; the others may ignore them.
struct DeclaredKeys {
  std::set<std::string> reads;   // read and not written
  std::set<std::string> writes;  // written (and perhaps read)
};

class Transaction {
 public:
  virtual ~Transaction() = default;
  virtual rpc::Task<Read> get(std::string key) = 0;
  virtual void put(std::string key, std::string value) = 0;
  virtual void remove(std::string key) = 0;
  // Optimistic precondition (Redis WATCH): commit only if `key` still has `version` (0 = absent) at commit time.
  virtual void expect(std::string key, uint64_t version) = 0;
  virtual rpc::Task<Outcome> commit() = 0;
  // Gives up (nothing was applied; nothing is locked before commit()).
  virtual void abort() = 0;
  // Labels the transaction in histories and per-type statistics (e.g. "SendPayment").
  virtual void set_type(std::string type) = 0;
  // After a successful commit: the version the transaction created for `key` (0 if it did not write it).
  virtual uint64_t committed_version(const std::string& key) const = 0;
  // After commit() returned kUnavailable: true when the transaction may have taken effect (see Outcome).
  virtual bool outcome_unknown() const = 0;
};

class TxnService {
 public:
  virtual ~TxnService() = default;
  // `declared` (optional): every key the transaction will read or write, for protocols that plan with it.
  virtual std::unique_ptr<Transaction> begin(const DeclaredKeys* declared = nullptr) = 0;
  // A read-only transaction of one key without a commit phase (Dandelion's GetOne): the committed value, from the
  // replication protocol that carries the transactions (cluster::ReplicaLog::read_committed).
  virtual rpc::Task<Read> read_one(std::string key) = 0;
  // Resumes after `d` without blocking the worker (retry loops back off with it while the cluster recovers).
  virtual rpc::Task<void> pause(std::chrono::milliseconds d) = 0;
};

}  // namespace rdx::txn
