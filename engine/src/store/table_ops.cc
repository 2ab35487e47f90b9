// HashTable operations and growth. Writers lock one chain (its primary bucket); readers never lock.
#include <algorithm>
#include <thread>

#include "store/cpu.h"
#include "store/record.h"
#include "store/table_impl.h"

namespace rdx::store {

namespace {

constexpr size_t kMigrateChunk = 64;      // buckets a migrating thread claims at once
constexpr int kMaxGrowAttempts = 8;       // growth rounds one insert may trigger before giving up
constexpr int kMaxMemoryAttempts = 2;     // reclaim rounds before kNoMemory
constexpr unsigned kLoadCheckEvery = 32;  // inserts per session between load checks

// In place if the new record fits and does not waste more than half the block.
bool fits_in_place(size_t need, size_t capacity) { return need <= capacity && need * 2 > capacity; }

}  // namespace

size_t HashTable::Impl::keys() const {
  int64_t n = 0;
  for (const Stripe& s : counts) n += s.n.load(std::memory_order_relaxed);
  return n > 0 ? static_cast<size_t>(n) : 0;
}

OpStatus HashTable::Impl::get(SessionState&, uint64_t h, std::string_view key, std::string* value_out,
                              uint64_t* version_out, uint64_t* lock_word_out) {
  if (key.size() > kMaxKeyBytes) return OpStatus::kTooLarge;
  for (;;) {
    std::byte* rec = lookup(index(), h, key);
    if (rec == nullptr) return OpStatus::kNotFound;
    // The lock word is read before and after the value and version: the three are one state of the record only
    // if it did not change meanwhile. (Read once after, a writer's placeholder version could pair with the lock
    // word of the value written over it: a version nobody wrote, reported readable.)
    auto lock = record::word_at(rec, record::kLockOffset);
    const uint64_t lock_before = lock_word_out != nullptr ? lock.load(std::memory_order_acquire) : 0;
    if (record::read(rec, value_out, version_out) == record::ReadResult::kOk) {
      if (lock_word_out == nullptr) return OpStatus::kOk;
      // record::read's loads are acquire loads: this one cannot move before them.
      const uint64_t lock_after = lock.load(std::memory_order_acquire);
      if (lock_after == lock_before) {
        *lock_word_out = lock_after;
        return OpStatus::kOk;
      }
      continue;  // locked, unlocked or re-flagged while read: read again
    }
    // Replaced or removed after its slot was read: look again (the newer record or the absence is current).
  }
}

std::byte* HashTable::Impl::find(uint64_t h, std::string_view key) {
  if (key.size() > kMaxKeyBytes) return nullptr;
  for (;;) {
    std::byte* rec = lookup(index(), h, key);
    if (rec == nullptr || !record::header(rec).deleted) return rec;
  }
}

OpStatus HashTable::Impl::execute_one(SessionState& s, Request& r, uint64_t h) {
  if (r.op == Op::kGet) return get(s, h, r.key, r.value_out, &r.version_out, &r.lock_word_out);
  return write(s, r.op, h, r.key, r.value, r.version, &r.version_out, r.new_lock_word);
}

OpStatus HashTable::Impl::write(SessionState& s, Op op, uint64_t h, std::string_view key, std::string_view value,
                                uint64_t version, uint64_t* version_out, uint64_t new_lock_word) {
  if (key.size() > kMaxKeyBytes || value.size() > kMaxValueBytes || version > kMaxVersion) {
    return OpStatus::kTooLarge;
  }
  if (op == Op::kInsert) version = kAutoVersion;
  int grow_attempts = 0, memory_attempts = 0;
  for (;;) {
    OpStatus status = OpStatus::kOk;
    switch (write_step(s, op, h, key, value, version, version_out, new_lock_word, &status)) {
      case Step::kDone:
        if (op != Op::kRemove && status == OpStatus::kOk && ++s.inserts_since_load_check >= kLoadCheckEvery) {
          s.inserts_since_load_check = 0;
          maybe_grow_for_load(s);
        }
        return status;
      case Step::kNeedGrow:
        if (++grow_attempts > kMaxGrowAttempts) return OpStatus::kNoMemory;
        if (!grow(s)) {  // the arena cannot hold a larger index: free what we can and try once more
          if (++memory_attempts > kMaxMemoryAttempts) return OpStatus::kNoMemory;
          reclaim(s);
        }
        break;
      case Step::kNeedMemory:
        if (++memory_attempts > kMaxMemoryAttempts) return OpStatus::kNoMemory;
        reclaim(s);
        break;
    }
  }
}

HashTable::Impl::Step HashTable::Impl::write_step(SessionState& s, Op op, uint64_t h, std::string_view key,
                                                  std::string_view value, uint64_t version, uint64_t* version_out,
                                                  uint64_t new_lock_word, OpStatus* status) {
  LockedChain c = lock_chain(index(), h);
  SlotRef where;
  std::byte* rec = scan_chain(*c.index, c.head, c.meta, hash_tag(h), key, &where);
  Step step;
  if (rec != nullptr) {
    step = update_existing(s, c, where, rec, op, h, key, value, version, version_out, status);
  } else if (op == Op::kRemove) {
    *status = OpStatus::kNotFound;
    step = Step::kDone;
  } else {
    // New key: explicit versions are taken as given; otherwise start above every version a removed record had.
    const uint64_t v = version != kAutoVersion ? version : removed_version_max.load(std::memory_order_relaxed) + 1;
    const size_t need = record::bytes_needed(key.size(), value.size());
    auto block = v > kMaxVersion ? std::nullopt : records.allocate(s.cache, need);
    if (v > kMaxVersion) {
      *status = OpStatus::kTooLarge;
      step = Step::kDone;
    } else if (!block) {
      step = Step::kNeedMemory;
    } else {
      record::create(pages.base() + block->offset, block->capacity, key, value, v, new_lock_word);
      if (place_slot(c, make_slot(hash_tag(h), block->offset), cfg.max_chain, /*for_migration=*/false)) {
        count_key(h, +1);
        if (version_out != nullptr) *version_out = v;
        *status = OpStatus::kOk;
        step = Step::kDone;
      } else {
        // Never published, but a one-sided reader that cached this block's offset for the same key (a record of it
        // lived here before) must not take it for the key's record: retire it as a removed record is.
        record::retire(pages.base() + block->offset);
        records.release(s.cache, block->offset, block->capacity);
        step = Step::kNeedGrow;
      }
    }
  }
  unlock_chain(c);
  return step;
}

HashTable::Impl::Step HashTable::Impl::update_existing(SessionState& s, LockedChain& c, SlotRef where, std::byte* rec,
                                                       Op op, uint64_t h, std::string_view key, std::string_view value,
                                                       uint64_t version, uint64_t* version_out, OpStatus* status) {
  const uint64_t stored = record::stable_version(rec);  // stable: we hold the only write access
  if (version_out != nullptr) *version_out = stored;
  if (op == Op::kInsert) {
    *status = OpStatus::kExists;
    return Step::kDone;
  }
  if (version != kAutoVersion && version <= stored) {
    *status = OpStatus::kStale;
    return Step::kDone;
  }
  if (op == Op::kRemove) {
    const uint64_t last = std::max(stored, version);
    uint64_t seen = removed_version_max.load(std::memory_order_relaxed);
    while (seen < last && !removed_version_max.compare_exchange_weak(seen, last, std::memory_order_relaxed)) {
    }
    clear_slot(c, where);
    retire_record(s, rec);
    count_key(h, -1);
    *status = OpStatus::kOk;
    return Step::kDone;
  }
  const uint64_t v = version != kAutoVersion ? version : stored + 1;
  if (v > kMaxVersion) {
    *status = OpStatus::kTooLarge;
    return Step::kDone;
  }
  const size_t need = record::bytes_needed(key.size(), value.size());
  if (fits_in_place(need, record::header(rec).capacity)) {
    record::overwrite(rec, key, value, v);
  } else {
    auto block = records.allocate(s.cache, need);
    if (!block) return Step::kNeedMemory;  // the old record stays as it was
    std::byte* fresh = pages.base() + block->offset;
    record::create(fresh, block->capacity, key, value, v);
    // The old block's lock word goes with the key (atomically: a CAS from a peer either lands before the swap and is
    // carried over, or fails on the retired word), then the new block becomes reachable.
    const uint64_t lock = retire_record(s, rec);
    record::word_at(fresh, record::kLockOffset).store(lock, std::memory_order_release);
    bucket_word(where.bucket, where.slot).store(make_slot(hash_tag(h), block->offset), std::memory_order_release);
  }
  if (version_out != nullptr) *version_out = v;
  *status = OpStatus::kOk;
  return Step::kDone;
}

uint64_t HashTable::Impl::retire_record(SessionState& s, std::byte* rec) {
  const uint64_t lock = record::retire(rec);
  Retired r;
  r.kind = Retired::Kind::kRecord;
  r.offset = static_cast<uint64_t>(rec - pages.base());
  r.capacity = record::header(rec).capacity;
  epochs.retire(s.epoch, r);
  return lock;
}

// ---------------------------------------------------------------------------------------------------------------
// Growth

bool HashTable::Impl::grow(SessionState& s) {
  Index* cur = index();
  if (cur->successor.load(std::memory_order_acquire) != nullptr) {
    help_migrate(s, cur);
    return true;
  }
  return start_resize(s, cur, /*wait_for_lock=*/true);
}

void HashTable::Impl::maybe_grow_for_load(SessionState& s) {
  Index* cur = index();
  if (cur->successor.load(std::memory_order_acquire) != nullptr) return;  // a resize is running
  const size_t n = keys();
  if (static_cast<double>(n) <= cfg.max_load * static_cast<double>(cur->buckets() * kSlotsPerBucket)) return;
  if (n < load_retry_keys.load(std::memory_order_relaxed)) return;
  start_resize(s, cur, /*wait_for_lock=*/false);
}

bool HashTable::Impl::start_resize(SessionState& s, Index* from, bool wait_for_lock) {
  std::unique_lock lock(resize_mu, std::defer_lock);
  if (wait_for_lock) {
    lock.lock();
  } else if (!lock.try_lock()) {
    return true;  // another thread is starting one
  }
  if (index() != from || from->successor.load(std::memory_order_acquire) != nullptr) {
    lock.unlock();  // someone else resized or is resizing: help it finish
    if (index() == from) help_migrate(s, from);
    return true;
  }
  Index* next = Index::create(pages, from->buckets() * 2);
  if (next == nullptr) {
    load_retry_keys.store(keys() + from->buckets() * kSlotsPerBucket / 8, std::memory_order_relaxed);
    return false;
  }
  from->successor.store(next, std::memory_order_release);
  lock.unlock();
  help_migrate(s, from);
  return true;
}

void HashTable::Impl::help_migrate(SessionState& s, Index* from) {
  Index* to = from->successor.load(std::memory_order_acquire);
  const size_t n = from->buckets();
  for (;;) {
    const size_t begin = from->migrate_cursor.fetch_add(kMigrateChunk, std::memory_order_relaxed);
    if (begin >= n) break;
    const size_t end = std::min(n, begin + kMigrateChunk);
    for (size_t i = begin; i < end; ++i) migrate_bucket(*from, i, *to, seed);
    if (from->migrate_done.fetch_add(end - begin, std::memory_order_acq_rel) + (end - begin) == n) {
      current.store(to, std::memory_order_release);
      resizes.fetch_add(1, std::memory_order_relaxed);
      Retired r;
      r.kind = Retired::Kind::kIndex;
      r.index = from;
      epochs.retire(s.epoch, r);
    }
  }
  // Chunks claimed by other threads may still be moving: the new index is complete only when they finish.
  while (index() == from) std::this_thread::yield();
}

}  // namespace rdx::store
