#include "store/epoch.h"

#include <algorithm>
#include <limits>

namespace rdx::store {

void EpochManager::attach(EpochSlot* slot) {
  std::lock_guard lock(mu_);
  slots_.push_back(slot);
}

void EpochManager::detach(EpochSlot* slot) {
  std::lock_guard lock(mu_);
  slots_.erase(std::remove(slots_.begin(), slots_.end(), slot), slots_.end());
  orphans_.insert(orphans_.end(), slot->retired.begin(), slot->retired.end());
  slot->retired.clear();
  orphans_pending_.store(!orphans_.empty(), std::memory_order_relaxed);
}

uint64_t EpochManager::advance_and_min_pinned() {
  // Orders this thread's earlier unlinks before the scan below (the other half of pin()'s barrier): a reader whose
  // pin the scan misses is guaranteed to see the unlinks. An RMW rather than a fence so TSan can model it too.
  barrier_.fetch_add(1, std::memory_order_seq_cst);
  const uint64_t current = global_.load(std::memory_order_seq_cst);
  uint64_t min_pinned = std::numeric_limits<uint64_t>::max();
  {
    std::lock_guard lock(mu_);
    for (const EpochSlot* s : slots_) {
      const uint64_t e = s->pinned.load(std::memory_order_seq_cst);
      if (e != 0) min_pinned = std::min(min_pinned, e);
    }
  }
  // Everyone pinned has seen `current`: later pins will see current + 1, so items retired now become freeable
  // once those sessions move on.
  if (min_pinned == std::numeric_limits<uint64_t>::max() || min_pinned >= current) {
    uint64_t expected = current;
    global_.compare_exchange_strong(expected, current + 1, std::memory_order_seq_cst);
  }
  return min_pinned;
}

}  // namespace rdx::store
