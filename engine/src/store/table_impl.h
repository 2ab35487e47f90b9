#pragma once
// Internals of HashTable shared by hashtable.cc (API, sessions, batches) and table_ops.cc (operations, growth).
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "store/alloc.h"
#include "store/epoch.h"
#include "store/hashtable.h"
#include "store/index.h"

namespace rdx::store {

struct SessionState {
  EpochSlot epoch;
  RecordAllocator::Cache cache;
  unsigned inserts_since_load_check = 0;
  size_t collect_at = EpochManager::kCollectThreshold;
};

struct HashTable::Impl {
  explicit Impl(const TableConfig& c);
  ~Impl();

  // Entering pins the session's epoch; leaving unpins it and frees what it retired once nobody can see it.
  void enter(SessionState& s) { epochs.pin(s.epoch); }
  void leave(SessionState& s);
  // Frees everything retired that no other pinned session can see (leaves and re-enters).
  void reclaim(SessionState& s);
  void free_retired(SessionState& s, const Retired& r);
  void close_session(SessionState* s);

  uint64_t hash(std::string_view key) const { return key_hash(key, seed); }
  Index* index() const { return current.load(std::memory_order_acquire); }

  // Operations; the caller has entered.
  OpStatus get(SessionState& s, uint64_t h, std::string_view key, std::string* value_out, uint64_t* version_out,
               uint64_t* lock_word_out = nullptr);
  std::byte* find(uint64_t h, std::string_view key);
  OpStatus write(SessionState& s, Op op, uint64_t h, std::string_view key, std::string_view value, uint64_t version,
                 uint64_t* version_out, uint64_t new_lock_word);
  OpStatus execute_one(SessionState& s, Request& r, uint64_t h);

  // Growth. grow() makes progress on growth: helps a running resize to completion or starts and runs one. False if
  // the arena cannot hold a larger index.
  bool grow(SessionState& s);
  void maybe_grow_for_load(SessionState& s);
  bool start_resize(SessionState& s, Index* from, bool wait_for_lock);
  void help_migrate(SessionState& s, Index* from);

  void count_key(uint64_t h, int delta) {
    counts[(h >> 32) & (counts.size() - 1)].n.fetch_add(delta, std::memory_order_relaxed);
  }
  size_t keys() const;

  TableConfig cfg;
  uint64_t seed;
  PageAllocator pages;
  RecordAllocator records;
  EpochManager epochs;
  std::atomic<Index*> current{nullptr};
  // Largest version any removed record had: fresh keys start above it, so a key's versions never repeat across
  // remove + insert.
  std::atomic<uint64_t> removed_version_max{0};
  struct alignas(64) Stripe {
    std::atomic<int64_t> n{0};
  };
  std::array<Stripe, 16> counts;
  std::atomic<size_t> resizes{0};
  std::mutex resize_mu;                    // one resize starts at a time
  std::atomic<size_t> load_retry_keys{0};  // after a failed load-triggered resize: retry at this many keys
  std::atomic<size_t> open_sessions{0};
  mutable std::mutex stats_mu;  // stats() reads the index through its own pinned slot
  mutable EpochSlot stats_slot;

 private:
  enum class Step : uint8_t { kDone, kNeedGrow, kNeedMemory };
  Step write_step(SessionState& s, Op op, uint64_t h, std::string_view key, std::string_view value, uint64_t version,
                  uint64_t* version_out, uint64_t new_lock_word, OpStatus* status);
  Step update_existing(SessionState& s, LockedChain& c, SlotRef where, std::byte* rec, Op op, uint64_t h,
                       std::string_view key, std::string_view value, uint64_t version, uint64_t* version_out,
                       OpStatus* status);
  // Flags the record deleted, hands it to epoch reclamation and returns the lock word it held.
  uint64_t retire_record(SessionState& s, std::byte* rec);
};

}  // namespace rdx::store
