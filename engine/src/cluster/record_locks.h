#pragma once
// Record locks at a key's primary (cluster/lockword.h): taken by a writer of any family (a transaction's lock step,
// a replication protocol's single-key write), never waited for here: a caller that finds the key held decides
// whether to abort (no-wait transactions) or to wait and try again (single-key writes).
#include <cstdint>
#include <optional>
#include <string_view>

#include "store/hashtable.h"

namespace rdx::cluster {

enum class LockStatus : uint8_t {
  kLocked,    // the caller holds the key now
  kHeld,      // another writer holds it
  kChanged,   // expect_version given and the key's version differs (version = the current one)
  kNoMemory,  // an absent key needs a placeholder and the table is full
  kInvalid,   // the key cannot be stored
};

struct LockResult {
  LockStatus status = LockStatus::kLocked;
  uint64_t version = 0;  // the key's version when locked (a placeholder's fresh version for an absent key)
  bool existed = false;  // the key existed (not a placeholder)
};

// Locks `key` for `writer`. An absent key gets a placeholder record that carries the lock (so nobody can insert it
// meanwhile). With expect_version, locks only if the key still has that version (0 = absent).
LockResult try_lock(store::HashTable& table, store::Session& s, std::string_view key, uint64_t writer,
                    std::optional<uint64_t> expect_version = std::nullopt);

// Releases `writer`'s lock. A record that is absent now (the placeholder of a key nobody wrote, or a committed
// delete: ReplicaLog::apply_at_primary leaves deletes as absent records under the lock) goes with it. False when
// `writer` did not hold the key.
bool release_lock(store::HashTable& table, store::Session& s, std::string_view key, uint64_t writer);

// Sets `set` and clears `clear` in the key's lock word, in one atomic step; false if the key has no record.
bool update_lock_bits(store::HashTable& table, store::Session& s, std::string_view key, uint64_t set, uint64_t clear);
inline bool set_lock_bits(store::HashTable& table, store::Session& s, std::string_view key, uint64_t bits) {
  return update_lock_bits(table, s, key, bits, 0);
}
inline bool clear_lock_bits(store::HashTable& table, store::Session& s, std::string_view key, uint64_t bits) {
  return update_lock_bits(table, s, key, 0, bits);
}

}  // namespace rdx::cluster
