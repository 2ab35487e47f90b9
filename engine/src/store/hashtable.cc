// HashTable API: creation, sessions, single operations, batches, record references, stats.
#include "store/hashtable.h"

#include <bit>
#include <cassert>
#include <cmath>
#include <random>
#include <utility>

#include "store/cpu.h"
#include "store/record.h"
#include "store/table_impl.h"

namespace rdx::store {

namespace {

uint64_t random_seed() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ rd();
}

constexpr size_t kBatchWindow = 32;  // requests prefetched together

}  // namespace

const char* op_status_name(OpStatus s) {
  switch (s) {
    case OpStatus::kOk:
      return "ok";
    case OpStatus::kNotFound:
      return "not_found";
    case OpStatus::kExists:
      return "exists";
    case OpStatus::kStale:
      return "stale";
    case OpStatus::kTooLarge:
      return "too_large";
    case OpStatus::kNoMemory:
      return "no_memory";
  }
  return "unknown";
}

// ---------------------------------------------------------------------------------------------------------------
// Impl lifecycle and epochs

HashTable::Impl::Impl(const TableConfig& c) : cfg(c), seed(random_seed()), pages(c.arena), records(pages) {
  epochs.attach(&stats_slot);
}

HashTable::Impl::~Impl() {
  epochs.detach(&stats_slot);
  SessionState scratch;  // receives records freed during teardown; the arena goes away with the table anyway
  epochs.drain_orphans([&](const Retired& r) { free_retired(scratch, r); });
  if (Index* idx = current.load()) Index::destroy(idx, pages);
}

void HashTable::Impl::leave(SessionState& s) {
  epochs.unpin(s.epoch);
  if (s.epoch.retired.size() >= s.collect_at) {
    epochs.collect(s.epoch, [&](const Retired& r) { free_retired(s, r); });
    // If pinned sessions hold much back, do not rescan the list on every operation.
    s.collect_at = std::max(EpochManager::kCollectThreshold, 2 * s.epoch.retired.size());
  }
}

void HashTable::Impl::reclaim(SessionState& s) {
  epochs.unpin(s.epoch);
  for (int round = 0; round < 2; ++round) {  // the first round may only advance the epoch
    epochs.collect(s.epoch, [&](const Retired& r) { free_retired(s, r); });
  }
  s.collect_at = EpochManager::kCollectThreshold;
  epochs.pin(s.epoch);
}

void HashTable::Impl::free_retired(SessionState& s, const Retired& r) {
  if (r.kind == Retired::Kind::kIndex) {
    Index::destroy(r.index, pages);
  } else {
    records.release(s.cache, r.offset, r.capacity);
  }
}

void HashTable::Impl::close_session(SessionState* s) {
  epochs.unpin(s->epoch);
  epochs.collect(s->epoch, [&](const Retired& r) { free_retired(*s, r); });
  records.flush(s->cache);
  epochs.detach(&s->epoch);  // what is still retired becomes an orphan that later collections free
  open_sessions.fetch_sub(1, std::memory_order_relaxed);
  delete s;
}

// ---------------------------------------------------------------------------------------------------------------
// Creation and sessions

Result<std::unique_ptr<HashTable>> HashTable::create(const TableConfig& cfg) {
  if (cfg.arena.empty()) return error(Code::kInvalidArgument, "hashtable arena is empty");
  if (cfg.initial_buckets == 0 || cfg.initial_buckets > (size_t{1} << 32)) {
    return error(Code::kInvalidArgument, "initial_buckets {} outside [1, 2^32]", cfg.initial_buckets);
  }
  if (cfg.max_chain == 0 || cfg.max_chain > 64) {
    return error(Code::kInvalidArgument, "max_chain {} outside [1, 64]", cfg.max_chain);
  }
  if (!(cfg.max_load > 0.0 && cfg.max_load <= 1.0)) {
    return error(Code::kInvalidArgument, "max_load {} outside (0, 1]", cfg.max_load);
  }
  auto impl = std::make_unique<Impl>(cfg);
  const size_t buckets = std::bit_ceil(cfg.initial_buckets);
  Index* idx = Index::create(impl->pages, buckets);
  if (idx == nullptr) {
    return error(Code::kResourceExhausted, "arena of {} bytes cannot hold an index of {} buckets", cfg.arena.size(),
                 buckets);
  }
  impl->current.store(idx, std::memory_order_release);
  return std::unique_ptr<HashTable>(new HashTable(std::move(impl)));
}

HashTable::HashTable(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HashTable::~HashTable() { assert(impl_->open_sessions.load() == 0 && "destroy every Session before its HashTable"); }

Session HashTable::session() {
  auto* st = new SessionState;
  impl_->epochs.attach(&st->epoch);
  impl_->open_sessions.fetch_add(1, std::memory_order_relaxed);
  return Session(this, st);
}

Session::~Session() {
  if (state_ != nullptr) table_->impl_->close_session(static_cast<SessionState*>(state_));
}

Session::Session(Session&& o) noexcept : table_(o.table_), state_(std::exchange(o.state_, nullptr)) {}

// ---------------------------------------------------------------------------------------------------------------
// Operations

OpStatus HashTable::get(Session& s, std::string_view key, std::string* value_out, uint64_t* version_out,
                        uint64_t* lock_word_out) {
  SessionState& st = *static_cast<SessionState*>(s.state_);
  impl_->enter(st);
  const OpStatus r = impl_->get(st, impl_->hash(key), key, value_out, version_out, lock_word_out);
  impl_->leave(st);
  return r;
}

OpStatus HashTable::put(Session& s, std::string_view key, std::string_view value, uint64_t version,
                        uint64_t* version_out, uint64_t new_lock_word) {
  SessionState& st = *static_cast<SessionState*>(s.state_);
  impl_->enter(st);
  const OpStatus r = impl_->write(st, Op::kPut, impl_->hash(key), key, value, version, version_out, new_lock_word);
  impl_->leave(st);
  return r;
}

OpStatus HashTable::insert(Session& s, std::string_view key, std::string_view value, uint64_t* version_out,
                           uint64_t new_lock_word) {
  SessionState& st = *static_cast<SessionState*>(s.state_);
  impl_->enter(st);
  const OpStatus r =
      impl_->write(st, Op::kInsert, impl_->hash(key), key, value, kAutoVersion, version_out, new_lock_word);
  impl_->leave(st);
  return r;
}

OpStatus HashTable::remove(Session& s, std::string_view key, uint64_t version) {
  SessionState& st = *static_cast<SessionState*>(s.state_);
  impl_->enter(st);
  const OpStatus r = impl_->write(st, Op::kRemove, impl_->hash(key), key, {}, version, nullptr, 0);
  impl_->leave(st);
  return r;
}

void HashTable::execute(Session& s, std::span<Request> batch) {
  SessionState& st = *static_cast<SessionState*>(s.state_);
  Impl& t = *impl_;
  t.enter(st);
  uint64_t hashes[kBatchWindow];
  for (size_t base = 0; base < batch.size(); base += kBatchWindow) {
    const std::span<Request> window = batch.subspan(base, std::min(kBatchWindow, batch.size() - base));
    // 1. every request's primary bucket, 2. the record its first matching slot points to, 3. execute in order.
    // The misses of the whole window overlap instead of being paid one after another.
    Index* idx = t.index();
    for (size_t i = 0; i < window.size(); ++i) {
      hashes[i] = t.hash(window[i].key);
      prefetch(idx->bucket_for(hashes[i]), window[i].op != Op::kGet);
    }
    for (size_t i = 0; i < window.size(); ++i) {
      Bucket* b = idx->bucket_for(hashes[i]);
      const uint16_t tag = hash_tag(hashes[i]);
      for (int slot = 1; slot <= kSlotsPerBucket; ++slot) {
        const uint64_t w = bucket_word(b, slot).load(std::memory_order_relaxed);
        if (w != 0 && slot_tag(w) == tag) {
          const std::byte* rec = t.pages.base() + slot_offset(w);
          prefetch(rec, window[i].op != Op::kGet);
          prefetch(rec + 47, window[i].op != Op::kGet);  // a small record may straddle two lines
          break;
        }
      }
    }
    for (size_t i = 0; i < window.size(); ++i) window[i].status = t.execute_one(st, window[i], hashes[i]);
  }
  t.leave(st);
}

RecordRef HashTable::find(Session& s, std::string_view key) {
  SessionState& st = *static_cast<SessionState*>(s.state_);
  impl_->enter(st);  // stays pinned until the session's next call, which keeps the record's block alive
  std::byte* rec = impl_->find(impl_->hash(key), key);
  return rec == nullptr ? RecordRef() : RecordRef(rec, this);
}

bool HashTable::grow(Session& s) {
  SessionState& st = *static_cast<SessionState*>(s.state_);
  impl_->enter(st);
  Index* before = impl_->index();
  bool grown = true;
  if (before->successor.load(std::memory_order_acquire) != nullptr) {
    impl_->help_migrate(st, before);  // finish the running resize; it doubled the index
  } else {
    grown = impl_->start_resize(st, before, /*wait_for_lock=*/true);
  }
  impl_->leave(st);
  return grown;
}

size_t HashTable::size() const { return impl_->keys(); }

uint64_t HashTable::removed_version_max() const { return impl_->removed_version_max.load(std::memory_order_relaxed); }

void HashTable::raise_removed_version_max(uint64_t version) {
  uint64_t seen = impl_->removed_version_max.load(std::memory_order_relaxed);
  while (seen < version &&
         !impl_->removed_version_max.compare_exchange_weak(seen, version, std::memory_order_relaxed)) {
  }
}

TableStats HashTable::stats() const {
  std::lock_guard lock(impl_->stats_mu);
  impl_->epochs.pin(impl_->stats_slot);  // keeps the index alive while we read it
  const Index* idx = impl_->index();
  TableStats st;
  st.keys = impl_->keys();
  st.buckets = idx->buckets();
  st.overflow_buckets = idx->overflow_in_use.load(std::memory_order_relaxed);
  impl_->epochs.unpin(impl_->stats_slot);
  st.resizes = impl_->resizes.load(std::memory_order_relaxed);
  st.arena_used = impl_->pages.used_bytes();
  st.arena_size = impl_->pages.arena_bytes();
  return st;
}

Status HashTable::decode_remote_record(std::span<const std::byte> image, std::string_view expected_key,
                                       std::string* value_out, uint64_t* version_out) {
  return record::decode_image(image, expected_key, value_out, version_out);
}

// ---------------------------------------------------------------------------------------------------------------
// RecordRef

std::atomic<uint64_t>& RecordRef::lock_word() const {
  static_assert(sizeof(std::atomic<uint64_t>) == 8 && std::atomic<uint64_t>::is_always_lock_free);
  return *reinterpret_cast<std::atomic<uint64_t>*>(static_cast<std::byte*>(rec_) + record::kLockOffset);
}

uint64_t RecordRef::version() const { return record::stable_version(static_cast<std::byte*>(rec_)); }

uint64_t RecordRef::arena_offset() const {
  return static_cast<uint64_t>(static_cast<std::byte*>(rec_) - table_->impl_->pages.base());
}

uint32_t RecordRef::length() const { return record::header(static_cast<std::byte*>(rec_)).capacity; }

}  // namespace rdx::store
