#include "replication/primary_backup/messages.h"

#include "cluster/kv_api.h"
#include "store/hashtable.h"

namespace rdx::replication::primary_backup {

namespace {
constexpr uint32_t kMaxWrites = 4096;
enum : uint8_t { kDeletes = 0, kHasValue = 1 };
}  // namespace

std::string LogBatch::encode() const {
  rpc::Writer w;
  w.put(txid).put(view).put(static_cast<uint8_t>(mode)).put(static_cast<uint8_t>(committed));
  w.put(static_cast<uint32_t>(writes.size()));
  for (const cluster::LogWrite& lw : writes) {
    w.bytes(lw.key).put(lw.version).put(lw.value ? kHasValue : kDeletes);
    if (lw.value) w.bytes(*lw.value);
  }
  return w.data();
}

std::optional<LogBatch> LogBatch::decode(std::span<const std::byte> payload) {
  rpc::Reader r(payload);
  LogBatch b;
  b.txid = r.get<uint64_t>();
  b.view = r.get<uint64_t>();
  auto mode = r.get<uint8_t>(), committed = r.get<uint8_t>();
  auto n = r.get<uint32_t>();
  if (!r.ok() || mode > static_cast<uint8_t>(cluster::LogMode::kHold) || committed > 1 || n > kMaxWrites)
    return std::nullopt;
  b.mode = static_cast<cluster::LogMode>(mode);
  b.committed = committed != 0;
  b.writes.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    cluster::LogWrite lw;
    std::string_view key = r.bytes(cluster::kMaxKeyBytes);
    lw.key = std::string(key);
    lw.version = r.get<uint64_t>();
    auto has_value = r.get<uint8_t>();
    if (has_value == kHasValue) {
      lw.value = std::string(r.bytes(store::kMaxValueBytes));
    } else if (has_value != kDeletes) {
      return std::nullopt;
    }
    if (key.empty()) return std::nullopt;
    b.writes.push_back(std::move(lw));
  }
  if (!r.done()) return std::nullopt;
  return b;
}

}  // namespace rdx::replication::primary_backup
