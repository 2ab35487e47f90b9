#pragma once
// What a record's 64-bit lock word means (store/hashtable.h leaves it to the layers above): one convention shared by
// every family, so a transaction and a single-key write of the same key exclude each other, and a reader anywhere
// (or a one-sided READ) can tell from the word alone whether the value it read is committed. Table 3 of Dandelion in
// one word; the version lives in the store's own version word.
//   bit 63      kLocked       a writer (transaction or single-key write, at the key's primary) holds the key; the low
//                             48 bits name it (WorkerContext::next_writer_id)
//   bit 62      kNotReadable  replica: holds an applied write not yet known committed (readers ask the primary)
//   bit 61      kAbsent       the key does not exist (yet): a placeholder that carries a lock, or a pending delete
//   bits 0-47   at a replica, with kNotReadable: the low bits of the hidden write's version, so the notice that
//               makes an older write readable cannot clear the mark of a newer one (primary_backup/replica.cc)
//   bits 48-55  holds         replica: how many held writes (ReplicaLog kHold) of this key wait for their outcome;
//                             the key is not readable while any does
#include <cstdint>

#include "store/hashtable.h"

namespace rdx::cluster::lockword {

inline constexpr uint64_t kLocked = uint64_t{1} << 63;
inline constexpr uint64_t kNotReadable = uint64_t{1} << 62;
inline constexpr uint64_t kAbsent = uint64_t{1} << 61;
inline constexpr uint64_t kOwnerMask = (uint64_t{1} << 48) - 1;
inline constexpr int kHoldShift = 48;
inline constexpr uint64_t kHoldOne = uint64_t{1} << kHoldShift;
inline constexpr uint64_t kHoldMask = uint64_t{0xff} << kHoldShift;

inline constexpr uint64_t owner_bits(uint64_t writer) { return writer & kOwnerMask; }
inline constexpr bool locked(uint64_t w) { return (w & kLocked) != 0; }
inline constexpr bool readable(uint64_t w) { return (w & (kLocked | kNotReadable | kHoldMask)) == 0; }
inline constexpr bool absent(uint64_t w) { return (w & kAbsent) != 0; }
inline constexpr bool retired(uint64_t w) { return w == store::kRetiredLockWord; }
inline constexpr uint64_t holds(uint64_t w) { return (w & kHoldMask) >> kHoldShift; }

}  // namespace rdx::cluster::lockword
