#pragma once
// How a key command reads and writes: each data command is written once against KeyOps and runs either directly on
// the cluster's replication protocol (one operation per key, as separate Redis commands would; a read-modify-write
// such as INCR is one operation there, replication/ops.h) or inside a Transaction (MULTI/EXEC, multi-key commands).
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cluster/topology.h"
#include "common/status.h"
#include "replication/replication.h"
#include "rpc/task.h"
#include "txn/txn.h"

namespace rdx::resp {

class KeyOps {
 public:
  virtual ~KeyOps() = default;
  // kOk (value filled), kNotFound, or a failure (error_line() says why).
  virtual rpc::Task<Code> get(std::string_view key, std::string* value) = 0;
  // kOk (`out` says what happened), or a failure, including an operation that does not apply to the key's value
  // (kInvalidArgument: INCR of a non-integer; error_line() says why, nothing was written).
  virtual rpc::Task<Code> write(std::string_view key, replication::Rmw op, replication::WriteResult* out) = 0;

  // kOk or a failure.
  rpc::Task<Code> put(std::string_view key, std::string value);
  // kOk (the key existed and is removed), kNotFound, or a failure.
  rpc::Task<Code> remove(std::string_view key);

  // The cluster could not serve an operation (not a command error such as a too-large value): a transaction using
  // these ops must abort.
  bool failed() const { return failure_ != Code::kOk; }
  // The error line for the reply to the last failed operation (without '-'), e.g. "ERR rdx unavailable ...".
  const std::string& error_line() const { return error_line_; }

 protected:
  Code fail(Code c, std::string_view detail);

 private:
  Code failure_ = Code::kOk;
  std::string error_line_;
};

// The reply line for an operation that failed with `c` (kUnavailable, kResourceExhausted, ...).
std::string failure_line(Code c, std::string_view detail);

// The reply line for a transaction whose commit returned kUnavailable: "nothing was applied, retry" when it failed
// before anything could take effect (a lock or validation did not answer), else that it may or may not have taken
// effect (Transaction::outcome_unknown: a client must read before it retries a non-idempotent command).
std::string unavailable_commit_line(const txn::Transaction& tx);

// Straight to the cluster's replication protocol.
class DirectOps final : public KeyOps {
 public:
  explicit DirectOps(replication::ReplicationProtocol& p) : protocol_(p) {}
  rpc::Task<Code> get(std::string_view key, std::string* value) override;
  rpc::Task<Code> write(std::string_view key, replication::Rmw op, replication::WriteResult* out) override;

 private:
  replication::ReplicationProtocol& protocol_;
};

// Reads go to the transaction (joining its read set); writes are buffered in it. The overlay gives read-your-writes
// inside the block whatever the transaction layer's own cache does.
class TxnOps final : public KeyOps {
 public:
  explicit TxnOps(txn::Transaction& t) : tx_(t) {}
  rpc::Task<Code> get(std::string_view key, std::string* value) override;
  rpc::Task<Code> write(std::string_view key, replication::Rmw op, replication::WriteResult* out) override;
  // A read met a conflict its protocol resolves by aborting (2PL): the commit aborts, and the caller tries again.
  bool conflicted() const { return conflicted_; }

 private:
  txn::Transaction& tx_;
  bool conflicted_ = false;
  std::unordered_map<std::string, std::optional<std::string>> overlay_;  // nullopt: removed in this transaction
};

}  // namespace rdx::resp
