#pragma once
// How a key command reads and writes: each data command is written once against KeyOps and runs either directly on
// the Protocol (one operation per key, as separate Redis commands would) or inside a Transaction (MULTI/EXEC, and
// every read-modify-write command such as INCR).
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/status.h"
#include "rpc/task.h"
#include "server/protocol.h"
#include "server/resp/key_gate.h"
#include "txn/txn.h"

namespace rdx::resp {

class KeyOps {
 public:
  virtual ~KeyOps() = default;
  // kOk (value filled), kNotFound, or a failure (error() says why).
  virtual rpc::Task<Code> get(std::string_view key, std::string* value) = 0;
  // kOk or a failure.
  virtual rpc::Task<Code> put(std::string_view key, std::string value) = 0;
  // kOk (the key existed and is removed), kNotFound, or a failure.
  virtual rpc::Task<Code> remove(std::string_view key) = 0;

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

// True when a write of `key` must reach another node (its shard has more than one replica).
bool has_remote_replicas(const server::Topology& topo, std::string_view key);

class DirectOps final : public KeyOps {
 public:
  // Writes take their key's turn in `gate` (one write per key in flight from this worker).
  DirectOps(server::Protocol& p, KeyGate& gate, const server::Topology& topo)
      : protocol_(p), gate_(gate), topo_(topo) {}
  rpc::Task<Code> get(std::string_view key, std::string* value) override;
  rpc::Task<Code> put(std::string_view key, std::string value) override;
  rpc::Task<Code> remove(std::string_view key) override;

 private:
  rpc::Task<void> enter(uint64_t h, std::string_view key);

  server::Protocol& protocol_;
  KeyGate& gate_;
  const server::Topology& topo_;
};

// Reads go to the transaction (joining its read set); writes are buffered in it. The overlay gives read-your-writes
// inside the block whatever the transaction layer's own cache does.
class TxnOps final : public KeyOps {
 public:
  explicit TxnOps(txn::Transaction& t) : tx_(t) {}
  rpc::Task<Code> get(std::string_view key, std::string* value) override;
  rpc::Task<Code> put(std::string_view key, std::string value) override;
  rpc::Task<Code> remove(std::string_view key) override;

 private:
  txn::Transaction& tx_;
  std::unordered_map<std::string, std::optional<std::string>> overlay_;  // nullopt: removed in this transaction
};

}  // namespace rdx::resp
