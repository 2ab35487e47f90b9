#include "store/index.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "common/atomic_copy.h"
#include "store/cpu.h"
#include "store/hashtable.h"
#include "store/record.h"

namespace rdx::store {

namespace {

// Zeroes with word atomics: peers' emulated one-sided READs may read any arena byte at any time.
void zero_words(std::byte* p, size_t bytes) {
  auto* w = reinterpret_cast<uint64_t*>(p);
  for (size_t i = 0; i < bytes / 8; ++i) std::atomic_ref<uint64_t>(w[i]).store(0, std::memory_order_relaxed);
}

// Locks a primary bucket unless it has moved (then returns false without locking).
bool lock_unless_moved(Bucket* head, uint64_t* meta_out) {
  auto m = bucket_word(head, 0);
  uint64_t cur = m.load(std::memory_order_acquire);
  for (;;) {
    if ((cur & meta::kMoved) != 0) return false;
    if ((cur & meta::kLock) != 0) {
      cpu_relax();
      cur = m.load(std::memory_order_acquire);
      continue;
    }
    if (m.compare_exchange_weak(cur, cur | meta::kLock, std::memory_order_acquire, std::memory_order_relaxed)) {
      *meta_out = cur | meta::kLock;
      return true;
    }
  }
}

bool bucket_empty(Bucket* b) {
  for (int s = 1; s <= kSlotsPerBucket; ++s)
    if (bucket_word(b, s).load(std::memory_order_relaxed) != 0) return false;
  return true;
}

// Sets the link word of `b` (the head's meta while we hold its lock, or an overflow bucket's link).
void set_link(LockedChain& c, Bucket* b, uint32_t link) {
  if (b == c.head) {
    c.meta = meta::with_link(c.meta, link);
    bucket_word(c.head, 0).store(c.meta, std::memory_order_release);
  } else {
    bucket_word(b, 0).store(meta::with_link(0, link), std::memory_order_release);
  }
}

}  // namespace

Index* Index::create(PageAllocator& pages, size_t buckets) {
  const size_t primary_bytes = buckets * sizeof(Bucket);
  const size_t overflow_count = std::max<size_t>(buckets / 4, 16);
  const size_t overflow_bytes = overflow_count * sizeof(Bucket);
  auto p = pages.allocate(primary_bytes);
  if (!p) return nullptr;
  auto o = pages.allocate(overflow_bytes);
  if (!o) {
    pages.release(*p, primary_bytes);
    return nullptr;
  }
  auto* index = new Index;
  index->arena = pages.base();
  index->primary = reinterpret_cast<Bucket*>(pages.base() + *p);
  index->mask = buckets - 1;
  index->overflow = reinterpret_cast<Bucket*>(pages.base() + *o);
  index->overflow_capacity = static_cast<uint32_t>(overflow_count);
  index->primary_offset = *p;
  index->overflow_offset = *o;
  zero_words(pages.base() + *p, primary_bytes);
  zero_words(pages.base() + *o, overflow_bytes);
  return index;
}

void Index::destroy(Index* index, PageAllocator& pages) {
  pages.release(index->primary_offset, index->buckets() * sizeof(Bucket));
  pages.release(index->overflow_offset, size_t{index->overflow_capacity} * sizeof(Bucket));
  delete index;
}

uint32_t Index::take_overflow(bool for_migration) {
  std::lock_guard lock(pool_mu);
  const uint32_t limit = for_migration ? overflow_capacity : overflow_capacity - overflow_capacity / 4;
  if (overflow_in_use.load(std::memory_order_relaxed) >= limit) return 0;
  uint32_t link;
  if (!pool_free.empty()) {
    link = pool_free.back();
    pool_free.pop_back();
  } else if (pool_fresh < overflow_capacity) {
    link = ++pool_fresh;
  } else {
    return 0;
  }
  overflow_in_use.fetch_add(1, std::memory_order_relaxed);
  return link;
}

void Index::return_overflow(uint32_t link) {
  std::lock_guard lock(pool_mu);
  pool_free.push_back(link);
  overflow_in_use.fetch_sub(1, std::memory_order_relaxed);
}

LockedChain lock_chain(Index* index, uint64_t h) {
  for (;;) {
    Bucket* head = index->bucket_for(h);
    uint64_t m;
    if (lock_unless_moved(head, &m)) return {index, head, m};
    index = index->successor.load(std::memory_order_acquire);
  }
}

void unlock_chain(const LockedChain& c) {
  bucket_word(c.head, 0).store((c.meta & ~meta::kLock) + meta::kVersionStep, std::memory_order_release);
}

std::byte* scan_chain(const Index& index, Bucket* head, uint64_t head_meta, uint16_t tag, std::string_view key,
                      SlotRef* where) {
  Bucket* b = head;
  uint64_t m = head_meta;
  for (unsigned steps = 0; b != nullptr && steps < kMaxChainWalk; ++steps) {
    for (int s = 1; s <= kSlotsPerBucket; ++s) {
      const uint64_t w = bucket_word(b, s).load(std::memory_order_acquire);
      if (w == 0 || slot_tag(w) != tag) continue;
      std::byte* rec = index.arena + slot_offset(w);
      if (record::key_equals(rec, key)) {
        if (where != nullptr) *where = {b, s};
        return rec;
      }
    }
    b = index.overflow_bucket(meta::link(m));
    if (b != nullptr) m = bucket_word(b, 0).load(std::memory_order_acquire);
  }
  return nullptr;
}

std::byte* lookup(Index* index, uint64_t h, std::string_view key) {
  const uint16_t tag = hash_tag(h);
  for (;;) {
    Bucket* head = index->bucket_for(h);
    const uint64_t before = bucket_word(head, 0).load(std::memory_order_acquire);
    if ((before & meta::kMoved) != 0) {
      index = index->successor.load(std::memory_order_acquire);
      continue;
    }
    if (std::byte* rec = scan_chain(*index, head, before, tag, key, nullptr)) return rec;
    // Absent only if no writer held or changed the chain meanwhile (a writer may have moved slots around).
    uint64_t after = bucket_word(head, 0).load(std::memory_order_acquire);
    if (after == before && (before & meta::kLock) == 0) return nullptr;
    while (after == before) {
      cpu_relax();
      after = bucket_word(head, 0).load(std::memory_order_acquire);
    }
  }
}

bool place_slot(LockedChain& c, uint64_t w, unsigned max_chain, bool for_migration) {
  Bucket* b = c.head;
  Bucket* tail = c.head;
  unsigned length = 0;
  for (uint64_t m = c.meta; b != nullptr; ++length) {
    for (int s = 1; s <= kSlotsPerBucket; ++s) {
      if (bucket_word(b, s).load(std::memory_order_relaxed) == 0) {
        bucket_word(b, s).store(w, std::memory_order_release);
        return true;
      }
    }
    tail = b;
    b = c.index->overflow_bucket(meta::link(m));
    if (b != nullptr) m = bucket_word(b, 0).load(std::memory_order_relaxed);
  }
  if ((max_chain != 0 && length >= max_chain) || length + 1 >= kMaxChainWalk) return false;
  const uint32_t link = c.index->take_overflow(for_migration);
  if (link == 0) return false;
  Bucket* fresh = c.index->overflow_bucket(link);
  bucket_word(fresh, 1).store(w, std::memory_order_release);  // filled before it becomes reachable
  set_link(c, tail, link);
  return true;
}

void clear_slot(LockedChain& c, SlotRef where) {
  bucket_word(where.bucket, where.slot).store(0, std::memory_order_release);
  if (where.bucket == c.head) return;
  // Recycle the empty overflow buckets at the end of the chain. All of them, not just the one emptied now: a bucket
  // emptied while a later one still held a slot stays linked until that one empties too (then both go).
  Bucket* keep = c.head;  // the last bucket that holds a slot (or the head)
  for (Bucket* b = c.index->overflow_bucket(meta::link(c.meta)); b != nullptr;) {
    if (!bucket_empty(b)) keep = b;
    b = c.index->overflow_bucket(meta::link(bucket_word(b, 0).load(std::memory_order_relaxed)));
  }
  uint32_t link = meta::link(keep == c.head ? c.meta : bucket_word(keep, 0).load(std::memory_order_relaxed));
  if (link == 0) return;
  set_link(c, keep, 0);
  while (link != 0) {
    Bucket* b = c.index->overflow_bucket(link);
    const uint32_t next = meta::link(bucket_word(b, 0).load(std::memory_order_relaxed));
    bucket_word(b, 0).store(0, std::memory_order_release);  // a recycled bucket starts a chain's tail: no link
    c.index->return_overflow(link);
    link = next;
  }
}

void migrate_bucket(Index& from, size_t i, Index& to, uint64_t seed) {
  Bucket* head = &from.primary[i];
  uint64_t m;
  if (!lock_unless_moved(head, &m)) return;
  char key_buf[kMaxKeyBytes];
  for (Bucket* b = head; b != nullptr; b = from.overflow_bucket(meta::link(bucket_word(b, 0).load()))) {
    for (int s = 1; s <= kSlotsPerBucket; ++s) {
      const uint64_t w = bucket_word(b, s).load(std::memory_order_relaxed);
      if (w == 0) continue;
      std::byte* rec = from.arena + slot_offset(w);
      const record::Header hdr = record::header(rec);
      atomic_load_bytes(key_buf, rec + record::kKeyOffset, hdr.key_len);
      LockedChain dst = lock_chain(&to, key_hash({key_buf, hdr.key_len}, seed));
      const bool placed = place_slot(dst, w, 0, /*for_migration=*/true);
      unlock_chain(dst);
      if (!placed) {
        // The successor is twice as large and keeps a reserve of overflow buckets for migration; with a random
        // per-table hash seed, exhausting it would take astronomically unlikely collisions.
        std::fprintf(stderr, "rdx store: overflow pool of a %zu-bucket index exhausted during migration\n",
                     to.buckets());
        std::abort();
      }
    }
  }
  // Old slots stay as they are: lock-free readers that already passed the meta check still find live records.
  bucket_word(head, 0).store(((m & ~meta::kLock) | meta::kMoved) + meta::kVersionStep, std::memory_order_release);
}

}  // namespace rdx::store
