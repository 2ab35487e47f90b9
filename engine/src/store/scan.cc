#include <cstring>

#include "common/atomic_copy.h"
#include "store/hashtable.h"
#include "store/index.h"
#include "store/record.h"
#include "store/table_impl.h"

namespace rdx::store {

namespace {
// Cursor = index identity (32 bits) | next primary bucket + 1 (32 bits). The identity changes with every resize.
uint32_t index_id(const Index* idx) { return static_cast<uint32_t>(mix64(idx->primary_offset, 0x5ca11ab1e)) | 1u; }
}  // namespace

uint64_t HashTable::scan(Session& s, uint64_t cursor, size_t max_items, std::vector<ScanItem>* out) {
  SessionState& st = *static_cast<SessionState*>(s.state_);
  Impl& t = *impl_;
  t.enter(st);
  Index* idx = t.index();
  while (idx->successor.load(std::memory_order_acquire) != nullptr) {  // finish a running resize first
    t.help_migrate(st, idx);
    idx = t.index();
  }
  const uint32_t id = index_id(idx);
  uint64_t b = (cursor >> 32) == id ? (cursor & 0xffffffffu) : 0;  // another index: start over
  if (b > 0) --b;
  const size_t n = idx->buckets();
  const size_t want = out->size() + max_items;
  for (; b < n && out->size() < want; ++b) {
    LockedChain c = lock_chain(idx, b);
    if (c.index != idx) {  // a resize started meanwhile: the caller continues in the new index, from the start
      unlock_chain(c);
      t.leave(st);
      return uint64_t{index_id(c.index)} << 32;
    }
    Bucket* bucket = c.head;
    uint64_t m = c.meta;
    for (unsigned steps = 0; bucket != nullptr && steps < kMaxChainWalk; ++steps) {
      for (int slot = 1; slot <= kSlotsPerBucket; ++slot) {
        const uint64_t w = bucket_word(bucket, slot).load(std::memory_order_acquire);
        if (w == 0) continue;
        std::byte* rec = idx->arena + slot_offset(w);
        record::Header h = record::header(rec);
        if (h.deleted) continue;
        ScanItem item;
        item.key.resize(h.key_len);
        atomic_load_bytes(item.key.data(), rec + record::kKeyOffset, h.key_len);
        if (record::read(rec, &item.value, &item.version) != record::ReadResult::kOk) continue;
        item.lock_word = record::word_at(rec, record::kLockOffset).load(std::memory_order_acquire);
        out->push_back(std::move(item));
      }
      bucket = idx->overflow_bucket(meta::link(m));
      if (bucket != nullptr) m = bucket_word(bucket, 0).load(std::memory_order_acquire);
    }
    unlock_chain(c);
  }
  t.leave(st);
  return b >= n ? 0 : (uint64_t{id} << 32) | (b + 1);
}

}  // namespace rdx::store
