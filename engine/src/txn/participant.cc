#include "txn/participant.h"

#include <spdlog/spdlog.h>

#include "server/node_shared.h"
#include "txn/lockword.h"

namespace rdx::txn {

using namespace lockword;

namespace {
constexpr size_t kMaxUndoTransactions = 1 << 16;  // undo logs kept for recovery; bounded if notifications are lost
}

Read Participant::interpret(store::OpStatus s, std::string&& value, uint64_t version, uint64_t lock,
                            bool require_readable) {
  Read r;
  if (s == store::OpStatus::kNotFound || (s == store::OpStatus::kOk && absent(lock) && readable(lock))) {
    r.status = Code::kNotFound;
    return r;
  }
  if (s != store::OpStatus::kOk || retired(lock)) {
    r.status = Code::kBusy;  // replaced under us: read again
    return r;
  }
  if (require_readable && !readable(lock)) {
    r.status = Code::kBusy;
    return r;
  }
  if (absent(lock)) {  // a locked placeholder: logically absent for execution-phase reads
    r.status = Code::kNotFound;
    return r;
  }
  r.value = std::move(value);
  r.version = version;
  return r;
}

Read Participant::read(std::string_view key) {
  for (;;) {
    std::string value;
    uint64_t version = 0, lock = 0;
    store::OpStatus s = ctx_.table().get(ctx_.session(), key, &value, &version, &lock);
    Read r = interpret(s, std::move(value), version, lock, false);
    if (r.status != Code::kBusy) return r;
  }
}

Read Participant::read_one(std::string_view key) {
  std::string value;
  uint64_t version = 0, lock = 0;
  store::OpStatus s = ctx_.table().get(ctx_.session(), key, &value, &version, &lock);
  return interpret(s, std::move(value), version, lock, true);
}

bool Participant::set_bits(std::string_view key, uint64_t bits) {
  for (;;) {
    store::RecordRef ref = ctx_.table().find(ctx_.session(), key);
    if (!ref.valid()) return false;
    uint64_t w = ref.lock_word().load(std::memory_order_acquire);
    if (retired(w)) continue;
    if (ref.lock_word().compare_exchange_weak(w, w | bits, std::memory_order_acq_rel)) return true;
  }
}

ItemResult Participant::lock_one(uint64_t txid, const Item& it) {
  const uint64_t mine = kLocked | owner_bits(txid);
  for (;;) {
    store::RecordRef ref = ctx_.table().find(ctx_.session(), it.key);
    if (!ref.valid()) {
      if ((it.flags & kCheckVersion) != 0 && it.version != 0) return {ItemStatus::kChanged, 0};  // read it, now gone
      // Lock the absent key through a placeholder, so no other transaction can insert it meanwhile.
      uint64_t v = 0;
      store::OpStatus s = ctx_.table().insert(ctx_.session(), it.key, {}, &v, mine | kAbsent);
      if (s == store::OpStatus::kExists) continue;
      if (s != store::OpStatus::kOk)
        return {s == store::OpStatus::kNoMemory ? ItemStatus::kNoMemory : ItemStatus::kInvalid, 0};
      if ((it.flags & kHasValue) != 0) log_[txid].push_back(it);
      ++stats_.locks;
      return {ItemStatus::kOk, v};
    }
    uint64_t w = ref.lock_word().load(std::memory_order_acquire);
    if (retired(w)) continue;
    if (locked(w)) {
      ++stats_.lock_conflicts;
      return {ItemStatus::kLocked, 0};
    }
    if ((it.flags & kCheckVersion) != 0) {
      uint64_t current = absent(w) ? 0 : ref.version();
      if (current != it.version) {
        ++stats_.lock_conflicts;
        return {ItemStatus::kChanged, current};
      }
    }
    if (!ref.lock_word().compare_exchange_strong(w, w | mine, std::memory_order_acq_rel)) continue;
    if ((it.flags & kHasValue) != 0) log_[txid].push_back(it);
    ++stats_.locks;
    return {ItemStatus::kOk, ref.version()};
  }
}

std::vector<ItemResult> Participant::lock(const Batch& b) {
  std::vector<ItemResult> out;
  out.reserve(b.items.size());
  for (const Item& it : b.items) out.push_back(lock_one(b.txid, it));
  return out;
}

ItemResult Participant::validate_one(uint64_t txid, const Item& it) {
  ++stats_.validations;
  for (;;) {
    store::RecordRef ref = ctx_.table().find(ctx_.session(), it.key);
    if (!ref.valid()) {
      if (it.version == 0) return {ItemStatus::kOk, 0};
      ++stats_.validation_failures;
      return {ItemStatus::kChanged, 0};
    }
    uint64_t w = ref.lock_word().load(std::memory_order_acquire);
    if (retired(w)) continue;
    if (locked(w) && (w & kOwnerMask) != owner_bits(txid)) {
      ++stats_.validation_failures;
      return {ItemStatus::kLocked, 0};
    }
    uint64_t current = absent(w) ? 0 : ref.version();
    if (current != it.version) {
      ++stats_.validation_failures;
      return {ItemStatus::kChanged, current};
    }
    return {ItemStatus::kOk, current};
  }
}

std::vector<ItemResult> Participant::validate(const Batch& b) {
  std::vector<ItemResult> out;
  out.reserve(b.items.size());
  for (const Item& it : b.items) out.push_back(validate_one(b.txid, it));
  return out;
}

// Writes the item's new version. A delete first becomes an absent placeholder carrying the new version (so a backup
// does not show the key missing before the transaction is known committed); it disappears when the write becomes
// final (unlock at a primary, readable notification at a backup).
ItemResult Participant::apply_write(const Item& it, uint64_t set_bits_on_record) {
  const bool del = (it.flags & kDelete) != 0;
  uint64_t bits = set_bits_on_record | (del ? kAbsent : 0);
  if (bits != 0) set_bits(it.key, bits);  // existing record: flags first, then the value (carried over on replace)
  store::OpStatus s = ctx_.table().put(ctx_.session(), it.key, del ? std::string_view{} : std::string_view(it.value),
                                       it.version, nullptr, /*lock_word_if_new=*/bits);
  if (s == store::OpStatus::kNoMemory) return {ItemStatus::kNoMemory, 0};
  if (s != store::OpStatus::kOk && s != store::OpStatus::kStale) return {ItemStatus::kInvalid, 0};
  return {ItemStatus::kOk, it.version};
}

std::vector<ItemResult> Participant::replicate(const Batch& b, bool at_backup) {
  std::vector<ItemResult> out;
  out.reserve(b.items.size());
  for (const Item& it : b.items) {
    if (at_backup) {
      Undo u;
      u.key = it.key;
      uint64_t lock = 0;
      store::OpStatus s = ctx_.table().get(ctx_.session(), it.key, &u.value, &u.version, &lock);
      u.existed = s == store::OpStatus::kOk && !absent(lock);
      if (undo_.size() < kMaxUndoTransactions) {
        undo_[b.txid].push_back(std::move(u));
        ++stats_.undo_entries;
      }
    }
    out.push_back(apply_write(it, at_backup ? kNotReadable : 0));
    ++stats_.replicated;
  }
  return out;
}

void Participant::unlock_one(uint64_t txid, const Item& it, bool commit) {
  const uint64_t mine = kLocked | owner_bits(txid);
  if (commit && (it.flags & kWrite) != 0) {
    Item w = it;
    if ((it.flags & kHasValue) == 0 && (it.flags & kDelete) == 0) {  // the value was logged with the lock (dnl1)
      auto lit = log_.find(txid);
      if (lit != log_.end())
        for (const Item& l : lit->second)
          if (l.key == it.key) w.value = l.value, w.flags |= kHasValue;
    }
    if ((w.flags & (kHasValue | kDelete)) != 0) {
      if ((w.flags & kDelete) != 0) {  // final at this replica: the lock goes with the record
        ctx_.shared().delete_with_tombstone(w.key, w.version, [&] { ctx_.table().remove(ctx_.session(), w.key); });
        return;
      }
      ctx_.table().put(ctx_.session(), w.key, w.value, w.version, nullptr, 0);
    }
  }
  for (;;) {
    store::RecordRef ref = ctx_.table().find(ctx_.session(), it.key);
    if (!ref.valid()) return;
    uint64_t w = ref.lock_word().load(std::memory_order_acquire);
    if (retired(w)) continue;
    if ((w & (kLocked | kOwnerMask)) != mine) {
      spdlog::warn("txn: unlock of {} by a transaction that does not hold it (word {:#x})", it.key, w);
      return;
    }
    if (absent(w) && !(commit && (it.flags & kWrite) != 0)) {
      ctx_.table().remove(ctx_.session(), it.key);  // our placeholder for an absent key: the key stays absent
      return;
    }
    uint64_t next = w & ~(kLocked | kOwnerMask | kAbsent);
    if (ref.lock_word().compare_exchange_strong(w, next, std::memory_order_acq_rel)) return;
  }
}

void Participant::unlock(const Batch& b) {
  for (const Item& it : b.items) unlock_one(b.txid, it, (it.flags & kCommit) != 0);
  log_.erase(b.txid);
}

void Participant::make_readable(const Batch& b) {
  for (const Item& it : b.items) {
    for (;;) {
      store::RecordRef ref = ctx_.table().find(ctx_.session(), it.key);
      if (!ref.valid()) break;
      uint64_t w = ref.lock_word().load(std::memory_order_acquire);
      if (retired(w)) continue;
      // Only the write this notification is about: a later transaction's pending write stays hidden.
      if (ref.version() != it.version || (w & kNotReadable) == 0) break;
      if (absent(w)) {  // a committed delete
        ctx_.shared().delete_with_tombstone(it.key, it.version,
                                            [&] { ctx_.table().remove(ctx_.session(), it.key, it.version + 1); });
        break;
      }
      if (ref.lock_word().compare_exchange_strong(w, w & ~kNotReadable, std::memory_order_acq_rel)) {
        ++stats_.readable_raised;
        break;
      }
    }
  }
  undo_.erase(b.txid);
}

}  // namespace rdx::txn
