#include "resp/key_ops.h"

#include <fmt/format.h>

#include "cluster/kv_api.h"
#include "store/hashtable.h"

namespace rdx::resp {

using rpc::Task;

std::string failure_line(Code c, std::string_view detail) {
  switch (c) {
    case Code::kResourceExhausted:
      return "OOM command not allowed when used memory > 'maxmemory'.";
    case Code::kInvalidArgument:
    case Code::kUnsupported:  // the replication protocol does not offer the operation (nothing was applied)
      return fmt::format("ERR {}", detail);
    case Code::kUnavailable:
      return fmt::format("ERR rdx unavailable ({}); nothing was applied, retry", detail);
    default:
      return fmt::format("ERR rdx {}: {}", code_name(c), detail);
  }
}

std::string unavailable_commit_line(const txn::Transaction& tx) {
  if (!tx.outcome_unknown())
    return failure_line(Code::kUnavailable, "a primary of a key in the transaction could not take its commit");
  return failure_line(Code::kTimeout,
                      "a replica of a key in the transaction failed while it committed: it may or may not have taken "
                      "effect");
}

Code KeyOps::fail(Code c, std::string_view detail) {
  // A bad argument or a full store is this command's error (Redis goes on with the next command of an EXEC); the
  // rest means the cluster could not serve the operation, so a transaction must not commit.
  if (c != Code::kInvalidArgument && c != Code::kResourceExhausted) failure_ = c;
  error_line_ = failure_line(c, detail);
  return c;
}

namespace {
// A key longer than the store allows cannot exist: reads and deletes of it find nothing (as Redis would report).
bool key_too_long(std::string_view key) { return key.size() > cluster::kMaxKeyBytes; }

std::string_view size_error(std::string_view key, std::string_view value) {
  if (key_too_long(key)) return "key is longer than 1024 bytes (rdx's key size limit)";
  if (value.size() > store::kMaxValueBytes)
    return "string exceeds maximum allowed size (rdx stores values up to 1 MiB)";
  return {};
}
}  // namespace

Task<Code> KeyOps::put(std::string_view key, std::string value) {
  replication::WriteResult ignored;
  co_return co_await write(key, replication::Rmw::put(std::move(value)), &ignored);
}

Task<Code> KeyOps::remove(std::string_view key) {
  if (key_too_long(key)) co_return Code::kNotFound;
  replication::WriteResult r;
  Code c = co_await write(key, replication::Rmw::remove(), &r);
  if (c != Code::kOk) co_return c;
  co_return r.existed ? Code::kOk : Code::kNotFound;
}

Task<Code> DirectOps::get(std::string_view key, std::string* value) {
  if (key_too_long(key)) co_return Code::kNotFound;
  cluster::KvResult r = co_await protocol_.get(std::string(key));
  if (r.status == Code::kOk) {
    *value = std::move(r.value);
    co_return Code::kOk;
  }
  if (r.status == Code::kNotFound) co_return Code::kNotFound;
  co_return fail(r.status, r.error);
}

Task<Code> DirectOps::write(std::string_view key, replication::Rmw op, replication::WriteResult* out) {
  if (auto why = size_error(key, op.value); !why.empty()) co_return fail(Code::kInvalidArgument, why);
  *out = co_await protocol_.write(std::string(key), std::move(op));
  if (out->status == Code::kOk) co_return Code::kOk;
  co_return fail(out->status, out->error);
}

Task<Code> TxnOps::get(std::string_view key, std::string* value) {
  if (key_too_long(key)) co_return Code::kNotFound;
  if (auto it = overlay_.find(std::string(key)); it != overlay_.end()) {
    if (!it->second) co_return Code::kNotFound;
    *value = *it->second;
    co_return Code::kOk;
  }
  txn::Read r = co_await tx_.get(std::string(key));
  if (r.status == Code::kOk) {
    *value = std::move(r.value);
    co_return Code::kOk;
  }
  if (r.status == Code::kNotFound) co_return Code::kNotFound;
  if (r.status == Code::kAborted) {  // (the reply is not sent: the transaction is tried again)
    conflicted_ = true;
    co_return Code::kAborted;
  }
  co_return fail(r.status, fmt::format("transaction read of a key failed: {}", code_name(r.status)));
}

// The same operation as the replication protocol runs (replication::apply_rmw), on what this transaction reads.
Task<Code> TxnOps::write(std::string_view key, replication::Rmw op, replication::WriteResult* out) {
  if (auto why = size_error(key, op.value); !why.empty()) co_return fail(Code::kInvalidArgument, why);
  std::optional<std::string> current;
  // A blind put needs no read (it must not join the read set: it would add a needless conflict).
  if (!op.is_blind_put()) {
    std::string value;
    Code c = co_await get(key, &value);
    if (c == Code::kOk) {
      current = std::move(value);
    } else if (c != Code::kNotFound) {
      co_return c;
    }
  }
  replication::Applied a = replication::apply_rmw(op, current);
  *out = replication::WriteResult{};
  out->existed = current.has_value();
  out->applied = a.applied;
  out->number = a.number;
  if (op.return_old && current) out->old_value = *current;
  if (a.status != Code::kOk) co_return fail(a.status, a.error);
  if (a.write) {
    if (a.new_value) {
      tx_.put(std::string(key), *a.new_value);
    } else {
      tx_.remove(std::string(key));
    }
    overlay_.insert_or_assign(std::string(key), std::move(a.new_value));
  }
  co_return Code::kOk;
}

}  // namespace rdx::resp
