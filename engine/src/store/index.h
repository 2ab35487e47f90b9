#pragma once
// The hashtable index: 64-byte buckets with bounded cache-line chaining (after DLHT).
//
// Bucket = 8 words. Word 0 (meta) of a primary bucket:
//   bit 0 lock (writers of the chain hold it) | bit 1 moved (migrated to the successor index) |
//   bits 2..33 link to the first overflow bucket (pool index + 1, 0 = none) | bits 34..63 chain version.
// Overflow buckets use only the link bits of word 0. Words 1..7 are slots: tag (16 hash bits) | record offset / 8
// (48 bits); 0 = empty. Primary bucket i holds keys with hash & mask == i; overflow buckets come from a per-index pool.
//
// Concurrency: writers lock the primary bucket (covers the chain) and bump the chain version when they unlock.
// Readers never lock: a slot read atomically points to a record that was live when read (epochs keep it allocated),
// so a key match is an answer; "not found" is only trusted if the chain version did not change during the scan.
// During a resize the resizer (and helping writers) migrate chain by chain under the old bucket's lock and then set
// `moved`; readers and writers that see `moved` continue in the successor index.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

#include "common/hash.h"
#include "store/alloc.h"

namespace rdx::store {

inline constexpr int kSlotsPerBucket = 7;
inline constexpr unsigned kMaxChainWalk = 256;  // bound on chain walks (a reader may follow a recycled bucket)

struct alignas(64) Bucket {
  uint64_t words[8];
};
static_assert(sizeof(Bucket) == 64);

inline std::atomic_ref<uint64_t> bucket_word(Bucket* b, int i) { return std::atomic_ref<uint64_t>(b->words[i]); }

namespace meta {
inline constexpr uint64_t kLock = 1, kMoved = 2;
inline constexpr int kLinkShift = 2;
inline constexpr uint64_t kLinkMask = uint64_t{0xffffffff} << kLinkShift;
inline constexpr uint64_t kVersionStep = uint64_t{1} << 34;
inline uint32_t link(uint64_t m) { return static_cast<uint32_t>((m & kLinkMask) >> kLinkShift); }
inline uint64_t with_link(uint64_t m, uint32_t link) { return (m & ~kLinkMask) | (uint64_t{link} << kLinkShift); }
}  // namespace meta

inline uint64_t make_slot(uint16_t tag, uint64_t offset) { return (uint64_t{tag} << 48) | (offset >> 3); }
inline uint16_t slot_tag(uint64_t w) { return static_cast<uint16_t>(w >> 48); }
inline uint64_t slot_offset(uint64_t w) { return (w & ((uint64_t{1} << 48) - 1)) << 3; }
inline uint16_t hash_tag(uint64_t h) { return static_cast<uint16_t>(h >> 48); }
inline uint64_t key_hash(std::string_view key, uint64_t seed) { return hash_bytes(key.data(), key.size(), seed); }

struct Index {
  std::byte* arena = nullptr;
  Bucket* primary = nullptr;
  uint64_t mask = 0;
  Bucket* overflow = nullptr;
  uint32_t overflow_capacity = 0;
  uint64_t primary_offset = 0, overflow_offset = 0;  // arena blocks backing the arrays

  std::mutex pool_mu;
  uint32_t pool_fresh = 0;          // overflow buckets never handed out start here
  std::vector<uint32_t> pool_free;  // links of recycled overflow buckets
  std::atomic<uint32_t> overflow_in_use{0};

  std::atomic<Index*> successor{nullptr};  // set when a resize starts
  std::atomic<uint64_t> migrate_cursor{0}, migrate_done{0};

  // Allocates and zeroes an index of `buckets` (a power of two) primary buckets; nullptr if the arena is full.
  static Index* create(PageAllocator& pages, size_t buckets);
  static void destroy(Index* index, PageAllocator& pages);

  size_t buckets() const { return mask + 1; }
  Bucket* bucket_for(uint64_t h) const { return &primary[h & mask]; }
  Bucket* overflow_bucket(uint32_t link) const {
    return link == 0 || link > overflow_capacity ? nullptr : &overflow[link - 1];
  }
  // Link of a zeroed overflow bucket, or 0. Ordinary writers leave the last quarter of the pool to migration, which
  // must never fail.
  uint32_t take_overflow(bool for_migration);
  void return_overflow(uint32_t link);
};

struct SlotRef {
  Bucket* bucket = nullptr;
  int slot = 0;
};

// A primary bucket locked by this thread, in the newest index that owns the hash.
struct LockedChain {
  Index* index = nullptr;
  Bucket* head = nullptr;
  uint64_t meta = 0;  // current meta word (lock bit set)
};

// Locks the chain of h, following `moved` buckets into successor indexes.
LockedChain lock_chain(Index* index, uint64_t h);
void unlock_chain(const LockedChain& c);

// Record of `key` in a chain (under its lock or lock-free, see the header comment). `where` gets its slot.
std::byte* scan_chain(const Index& index, Bucket* head, uint64_t head_meta, uint16_t tag, std::string_view key,
                      SlotRef* where);
// Lock-free lookup starting at `index`: the record of key (live when its slot was read) or nullptr.
std::byte* lookup(Index* index, uint64_t h, std::string_view key);

// Stores slot word `w` into an empty slot of the locked chain, appending an overflow bucket if needed. Fails when
// the chain already has max_chain buckets or the pool is exhausted (the table must grow). Migration passes
// max_chain = 0 (no bound).
bool place_slot(LockedChain& c, uint64_t w, unsigned max_chain, bool for_migration);
// Empties a slot of the locked chain; the empty overflow buckets at the chain's tail go back to the pool.
void clear_slot(LockedChain& c, SlotRef where);

// Moves the chain of primary bucket i of `from` into `to` (its successor) and marks it moved. No-op if moved.
void migrate_bucket(Index& from, size_t i, Index& to, uint64_t seed);

}  // namespace rdx::store
