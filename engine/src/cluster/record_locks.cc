#include "cluster/record_locks.h"

#include "cluster/lockword.h"

namespace rdx::cluster {

using namespace lockword;

LockResult try_lock(store::HashTable& table, store::Session& s, std::string_view key, uint64_t writer,
                    std::optional<uint64_t> expect_version) {
  const uint64_t mine = kLocked | owner_bits(writer);
  for (;;) {
    store::RecordRef ref = table.find(s, key);
    if (!ref.valid()) {
      if (expect_version && *expect_version != 0) return {LockStatus::kChanged, 0, false};  // read it, now gone
      uint64_t v = 0;
      store::OpStatus st = table.insert(s, key, {}, &v, mine | kAbsent);
      if (st == store::OpStatus::kExists) continue;
      if (st != store::OpStatus::kOk)
        return {st == store::OpStatus::kNoMemory ? LockStatus::kNoMemory : LockStatus::kInvalid, 0, false};
      return {LockStatus::kLocked, v, false};
    }
    uint64_t w = ref.lock_word().load(std::memory_order_acquire);
    if (retired(w)) continue;
    // Held writes (kHold) exist at a primary only after a failover: their outcome comes from their coordinator.
    if (locked(w) || holds(w) > 0) return {LockStatus::kHeld, 0, false};
    uint64_t current = absent(w) ? 0 : ref.version();
    if (expect_version && current != *expect_version) return {LockStatus::kChanged, current, false};
    // (Owner bits left without kLocked are a replica's tag of a write it showed: meaningless here, replaced.)
    if (!ref.lock_word().compare_exchange_strong(w, (w & ~kOwnerMask) | mine, std::memory_order_acq_rel)) continue;
    if (expect_version) {
      // A whole write of another writer (lock, write, unlock: the same word again) may have passed between the load
      // of w and that of the version: compare again, now that the version cannot change.
      const uint64_t now = absent(w) ? 0 : ref.version();
      if (now != *expect_version) {
        release_lock(table, s, key, writer);
        return {LockStatus::kChanged, now, false};
      }
    }
    return {LockStatus::kLocked, ref.version(), !absent(w)};
  }
}

bool release_lock(store::HashTable& table, store::Session& s, std::string_view key, uint64_t writer) {
  const uint64_t mine = kLocked | owner_bits(writer);
  for (;;) {
    store::RecordRef ref = table.find(s, key);
    if (!ref.valid()) return false;
    uint64_t w = ref.lock_word().load(std::memory_order_acquire);
    if (retired(w)) continue;
    if ((w & (kLocked | kOwnerMask)) != mine) return false;
    if (absent(w)) {
      table.remove(s, key);
      return true;
    }
    uint64_t next = w & ~(kLocked | kOwnerMask);
    if (ref.lock_word().compare_exchange_strong(w, next, std::memory_order_acq_rel)) return true;
  }
}

bool update_lock_bits(store::HashTable& table, store::Session& s, std::string_view key, uint64_t set, uint64_t clear) {
  for (;;) {
    store::RecordRef ref = table.find(s, key);
    if (!ref.valid()) return false;
    uint64_t w = ref.lock_word().load(std::memory_order_acquire);
    if (retired(w)) continue;
    if (ref.lock_word().compare_exchange_weak(w, (w | set) & ~clear, std::memory_order_acq_rel)) return true;
  }
}

}  // namespace rdx::cluster
