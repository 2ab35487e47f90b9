#pragma once
// The transaction API (Dandelion's TxCtx, as coroutines). A Transaction executes reads during its execution phase
// and buffers every write (its TxCache); commit() runs the cluster's commit protocol (dnl4, dnl2, dnl1; read-only
// transactions commit with dnl-ro). Many transactions are in flight per worker: each is a coroutine.
//
// Async use with a reorder buffer (Dandelion's API): get_async() returns a request id at once; poll(id) waits for
// that request *and every earlier one* (the reorder buffer keeps issue order), poll_all() for all of them. The
// coroutine form `co_await tx.get(key)` is the synchronous wrapper.
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "rpc/task.h"

namespace rdx::txn {

enum class Outcome : uint8_t {
  kCommitted,
  kAborted,      // conflict or failed validation (including an expect() that no longer holds): nothing applied
  kUnavailable,  // a replica or primary could not be reached: nothing applied (retry later)
};
const char* outcome_name(Outcome o);

struct Read {
  Code status = Code::kOk;  // kOk or kNotFound; kUnavailable on failure
  std::string value;
  uint64_t version = 0;  // 0 when absent
};

// Result of a single-key write: its outcome and, when committed, the version it created.
struct WriteResult {
  Outcome outcome = Outcome::kCommitted;
  uint64_t version = 0;
  bool existed = true;  // remove_one: false if the key was absent (nothing was written)
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
};

class TxnService {
 public:
  virtual ~TxnService() = default;
  virtual std::unique_ptr<Transaction> begin() = 0;
  // Single-key operations without a commit phase (GetOne/PutOne), consistent with concurrent transactions.
  virtual rpc::Task<Read> get_one(std::string key) = 0;
  virtual rpc::Task<WriteResult> put_one(std::string key, std::string value) = 0;
  virtual rpc::Task<WriteResult> remove_one(std::string key) = 0;
};

}  // namespace rdx::txn
