#include "server/resp/key_ops.h"

#include <fmt/format.h>

#include "server/kv_api.h"
#include "store/hashtable.h"

namespace rdx::resp {

using rpc::Task;

std::string failure_line(Code c, std::string_view detail) {
  switch (c) {
    case Code::kResourceExhausted:
      return "OOM command not allowed when used memory > 'maxmemory'.";
    case Code::kInvalidArgument:
      return fmt::format("ERR {}", detail);
    case Code::kUnavailable:
      return fmt::format("ERR rdx unavailable ({}); nothing was applied, retry", detail);
    default:
      return fmt::format("ERR rdx {}: {}", code_name(c), detail);
  }
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
bool key_too_long(std::string_view key) { return key.size() > server::kMaxKeyBytes; }

std::string_view size_error(std::string_view key, std::string_view value) {
  if (key_too_long(key)) return "key is longer than 1024 bytes (rdx's key size limit)";
  if (value.size() > store::kMaxValueBytes)
    return "string exceeds maximum allowed size (rdx stores values up to 1 MiB)";
  return {};
}
}  // namespace

bool has_remote_replicas(const server::Topology& topo, std::string_view key) {
  return topo.shards[topo.shards.size() == 1 ? 0 : topo.shard_of_key(key)].members.size() > 1;
}

Task<void> DirectOps::enter(uint64_t h, std::string_view key) {
  bool node_wide = has_remote_replicas(topo_, key);
  if (!gate_.try_enter(h, node_wide)) co_await gate_.enter(h, node_wide);
}

Task<Code> DirectOps::get(std::string_view key, std::string* value) {
  if (key_too_long(key)) co_return Code::kNotFound;
  server::KvResult r = co_await protocol_.get(std::string(key));
  if (r.status == Code::kOk) {
    *value = std::move(r.value);
    co_return Code::kOk;
  }
  if (r.status == Code::kNotFound) co_return Code::kNotFound;
  co_return fail(r.status, r.error);
}

Task<Code> DirectOps::put(std::string_view key, std::string value) {
  if (auto why = size_error(key, value); !why.empty()) co_return fail(Code::kInvalidArgument, why);
  uint64_t h = KeyGate::hash(key);
  co_await enter(h, key);
  KeyGate::Hold hold(gate_, h);
  server::KvResult r = co_await protocol_.put(std::string(key), std::move(value));
  if (r.status == Code::kOk) co_return Code::kOk;
  co_return fail(r.status, r.error);
}

Task<Code> DirectOps::remove(std::string_view key) {
  if (key_too_long(key)) co_return Code::kNotFound;
  uint64_t h = KeyGate::hash(key);
  co_await enter(h, key);
  KeyGate::Hold hold(gate_, h);
  server::KvResult r = co_await protocol_.remove(std::string(key));
  if (r.status == Code::kOk || r.status == Code::kNotFound) co_return r.status;
  co_return fail(r.status, r.error);
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
  co_return fail(r.status, fmt::format("transaction read of a key failed: {}", code_name(r.status)));
}

Task<Code> TxnOps::put(std::string_view key, std::string value) {
  if (auto why = size_error(key, value); !why.empty()) co_return fail(Code::kInvalidArgument, why);
  tx_.put(std::string(key), value);
  overlay_.insert_or_assign(std::string(key), std::move(value));
  co_return Code::kOk;
}

Task<Code> TxnOps::remove(std::string_view key) {
  if (key_too_long(key)) co_return Code::kNotFound;
  std::string ignored;
  Code c = co_await get(key, &ignored);  // DEL reports whether the key existed; the read joins the read set
  if (c != Code::kOk) co_return c;
  tx_.remove(std::string(key));
  overlay_.insert_or_assign(std::string(key), std::nullopt);
  co_return Code::kOk;
}

}  // namespace rdx::resp
