#pragma once
// How the transaction layer uses a record's 64-bit lock word (store/hashtable.h leaves its meaning to protocols).
// Table 3 of Dandelion, in one word: the version lives in the store's own version word.
#include <cstdint>

#include "store/hashtable.h"

namespace rdx::txn::lockword {

inline constexpr uint64_t kLocked = uint64_t{1} << 63;       // held by a committing transaction (no-wait: others abort)
inline constexpr uint64_t kNotReadable = uint64_t{1} << 62;  // backup: holds a replicated write not yet known committed
inline constexpr uint64_t kAbsent = uint64_t{1} << 61;  // placeholder: the key does not exist (yet); reads see absent
inline constexpr uint64_t kOwnerMask = (uint64_t{1} << 48) - 1;  // low bits of the owning transaction id

inline constexpr uint64_t owner_bits(uint64_t txid) { return txid & kOwnerMask; }
inline constexpr bool locked(uint64_t w) { return (w & kLocked) != 0; }
inline constexpr bool readable(uint64_t w) { return (w & (kLocked | kNotReadable)) == 0; }
inline constexpr bool absent(uint64_t w) { return (w & kAbsent) != 0; }
inline constexpr bool retired(uint64_t w) { return w == store::kRetiredLockWord; }

}  // namespace rdx::txn::lockword
