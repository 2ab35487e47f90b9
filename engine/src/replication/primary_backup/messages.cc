#include "replication/primary_backup/messages.h"

#include "cluster/kv_api.h"
#include "store/hashtable.h"

namespace rdx::replication::primary_backup {

namespace {
constexpr uint32_t kMaxWrites = 4096;
constexpr uint16_t kMaxParticipants = 1024;
enum : uint8_t { kDeletes = 0, kHasValue = 1 };

void put_write(rpc::Writer& w, const cluster::LogWrite& lw) {
  w.bytes(lw.key).put(lw.version).put(lw.value ? kHasValue : kDeletes);
  if (lw.value) w.bytes(*lw.value);
}

std::optional<cluster::LogWrite> get_write(rpc::Reader& r) {
  cluster::LogWrite lw;
  lw.key = std::string(r.bytes(cluster::kMaxKeyBytes));
  lw.version = r.get<uint64_t>();
  const auto has_value = r.get<uint8_t>();
  if (has_value == kHasValue) {
    lw.value = std::string(r.bytes(store::kMaxValueBytes));
  } else if (has_value != kDeletes) {
    return std::nullopt;
  }
  if (!r.ok() || lw.key.empty()) return std::nullopt;
  return lw;
}
}  // namespace

std::string LogBatch::encode() const {
  rpc::Writer w;
  w.put(txid)
      .put(view)
      .put(static_cast<uint8_t>(mode))
      .put(static_cast<uint8_t>((committed ? 1 : 0) | (recovered ? 2 : 0)));
  w.put(static_cast<uint16_t>(participants.size()));
  for (uint16_t p : participants) w.put(p);
  w.put(static_cast<uint32_t>(writes.size()));
  for (const cluster::LogWrite& lw : writes) put_write(w, lw);
  return w.data();
}

std::optional<LogBatch> LogBatch::decode(std::span<const std::byte> payload) {
  rpc::Reader r(payload);
  LogBatch b;
  b.txid = r.get<uint64_t>();
  b.view = r.get<uint64_t>();
  auto mode = r.get<uint8_t>(), flags = r.get<uint8_t>();  // bit 0: committed, bit 1: recovered
  const auto np = r.get<uint16_t>();
  if (!r.ok() || np > kMaxParticipants) return std::nullopt;
  for (uint16_t i = 0; i < np && r.ok(); ++i) b.participants.push_back(r.get<uint16_t>());
  auto n = r.get<uint32_t>();
  if (!r.ok() || mode > static_cast<uint8_t>(cluster::LogMode::kHold) || flags > 3 || n > kMaxWrites)
    return std::nullopt;
  b.mode = static_cast<cluster::LogMode>(mode);
  b.committed = (flags & 1) != 0;
  b.recovered = (flags & 2) != 0;
  b.writes.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    auto lw = get_write(r);
    if (!lw) return std::nullopt;
    b.writes.push_back(std::move(*lw));
  }
  if (!r.done()) return std::nullopt;
  return b;
}

std::string encode_undecided(const std::vector<cluster::InheritedWrite>& ws) {
  rpc::Writer w;
  w.put(static_cast<uint32_t>(ws.size()));
  for (const cluster::InheritedWrite& u : ws) {
    w.put(u.txid).put(static_cast<uint16_t>(u.participants.size()));
    for (uint16_t p : u.participants) w.put(p);
    put_write(w, u.write);
    w.put(u.before ? kHasValue : kDeletes);
    if (u.before) w.bytes(*u.before);
  }
  return w.data();
}

std::optional<std::vector<cluster::InheritedWrite>> decode_undecided(std::span<const std::byte> payload) {
  rpc::Reader r(payload);
  std::vector<cluster::InheritedWrite> out;
  const auto n = r.get<uint32_t>();
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    cluster::InheritedWrite u;
    u.txid = r.get<uint64_t>();
    const auto np = r.get<uint16_t>();
    if (!r.ok() || np > kMaxParticipants) return std::nullopt;
    for (uint16_t j = 0; j < np && r.ok(); ++j) u.participants.push_back(r.get<uint16_t>());
    auto lw = get_write(r);
    if (!lw) return std::nullopt;
    u.write = std::move(*lw);
    const auto has_before = r.get<uint8_t>();
    if (has_before == kHasValue) {
      u.before = std::string(r.bytes(store::kMaxValueBytes));
    } else if (has_before != kDeletes) {
      return std::nullopt;
    }
    out.push_back(std::move(u));
  }
  if (!r.done()) return std::nullopt;
  return out;
}

}  // namespace rdx::replication::primary_backup
