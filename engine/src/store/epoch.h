#pragma once
// Epoch-based reclamation. A session pins the current global epoch before it touches the index or records and
// unpins when done; a writer that unlinks a block retires it with the epoch of the moment, and the block is freed
// only once every pinned session has pinned a later epoch (so no reader can still hold a pointer to it).
// Lock-free readers therefore never see a block reused under them, and deletes still return memory.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace rdx::store {

struct Index;

// Something unlinked that must outlive the readers that may still see it.
struct Retired {
  enum class Kind : uint8_t { kRecord, kIndex };
  uint64_t epoch = 0;
  Kind kind = Kind::kRecord;
  uint32_t capacity = 0;   // kRecord
  uint64_t offset = 0;     // kRecord: arena offset
  Index* index = nullptr;  // kIndex
};

// One per session. `pinned` is 0 when the session is outside the table, else the epoch it pinned.
struct EpochSlot {
  alignas(64) std::atomic<uint64_t> pinned{0};
  std::vector<Retired> retired;
};

class EpochManager {
 public:
  static constexpr size_t kCollectThreshold = 64;  // retired items per session before a collection is tried

  void attach(EpochSlot* slot);
  // Detaches a slot; what it retired and could not free yet moves to a shared list that later collections drain.
  void detach(EpochSlot* slot);

  // Pins the current epoch. The exchange (a seq_cst read-modify-write, a full barrier) publishes the pin before any
  // later load of the index; re-reading the global epoch afterwards guarantees that, while this slot stays pinned
  // at e, the global epoch is at most e + 1 (an advance needs every pinned slot to have reached the current epoch).
  void pin(EpochSlot& slot) {
    uint64_t e = global_.load(std::memory_order_seq_cst);
    for (;;) {
      slot.pinned.exchange(e, std::memory_order_seq_cst);
      const uint64_t now = global_.load(std::memory_order_seq_cst);
      if (now == e) return;
      e = now;
    }
  }
  void unpin(EpochSlot& slot) { slot.pinned.store(0, std::memory_order_release); }

  // Call while pinned, after the item became unreachable for new readers. Any reader that could still reach it pinned
  // an epoch <= the global epoch at the unlink <= this slot's pin + 1, so that bound is the item's tag (no fence or
  // shared write needed on this path).
  void retire(EpochSlot& slot, Retired item) {
    item.epoch = slot.pinned.load(std::memory_order_relaxed) + 1;
    slot.retired.push_back(item);
  }

  // Advances the global epoch when every pinned session has caught up, then hands every item of `slot` (and of the
  // shared orphan list) that no pinned session can reach to free_fn(const Retired&).
  template <typename FreeFn>
  void collect(EpochSlot& slot, FreeFn&& free_fn) {
    const uint64_t safe = advance_and_min_pinned();
    auto keep = slot.retired.begin();
    for (auto it = slot.retired.begin(); it != slot.retired.end(); ++it) {
      if (it->epoch < safe) {
        free_fn(*it);
      } else {
        *keep++ = *it;
      }
    }
    slot.retired.erase(keep, slot.retired.end());
    if (orphans_pending_.load(std::memory_order_relaxed)) {
      std::vector<Retired> freeable;
      {
        std::lock_guard lock(mu_);
        auto k = orphans_.begin();
        for (auto it = orphans_.begin(); it != orphans_.end(); ++it) {
          if (it->epoch < safe) {
            freeable.push_back(*it);
          } else {
            *k++ = *it;
          }
        }
        orphans_.erase(k, orphans_.end());
        orphans_pending_.store(!orphans_.empty(), std::memory_order_relaxed);
      }
      for (const Retired& r : freeable) free_fn(r);
    }
  }

  // Table teardown (no session left): everything retired is freeable.
  template <typename FreeFn>
  void drain_orphans(FreeFn&& free_fn) {
    std::lock_guard lock(mu_);
    for (const Retired& r : orphans_) free_fn(r);
    orphans_.clear();
  }

  uint64_t epoch() const { return global_.load(std::memory_order_relaxed); }

 private:
  // Returns the smallest epoch pinned by any session (UINT64_MAX when none is pinned).
  uint64_t advance_and_min_pinned();

  std::atomic<uint64_t> global_{1};
  std::atomic<uint64_t> barrier_{0};  // target of the collector's full-barrier read-modify-write
  std::mutex mu_;                     // slots_ and orphans_
  std::vector<EpochSlot*> slots_;
  std::vector<Retired> orphans_;
  std::atomic<bool> orphans_pending_{false};
};

}  // namespace rdx::store
