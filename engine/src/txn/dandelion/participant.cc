#include "txn/dandelion/participant.h"

#include <spdlog/spdlog.h>

#include "cluster/lockword.h"
#include "cluster/record_locks.h"

namespace rdx::txn::dandelion {

using namespace cluster::lockword;

ItemResult Participant::lock_one(uint64_t txid, const Item& it) {
  std::optional<uint64_t> expect;
  if ((it.flags & kCheckVersion) != 0) expect = it.version;
  cluster::LockResult r = cluster::try_lock(ctx_.table(), ctx_.session(), it.key, txid, expect);
  switch (r.status) {
    case cluster::LockStatus::kLocked:
      if ((it.flags & kHasValue) != 0) logged_[txid].push_back(it);
      ++stats_.locks;
      return {ItemStatus::kOk, r.version};
    case cluster::LockStatus::kHeld:
      ++stats_.lock_conflicts;
      return {ItemStatus::kLocked, 0};
    case cluster::LockStatus::kChanged:
      ++stats_.lock_conflicts;
      return {ItemStatus::kChanged, r.version};
    case cluster::LockStatus::kNoMemory:
      return {ItemStatus::kNoMemory, 0};
    case cluster::LockStatus::kInvalid:
      break;
  }
  return {ItemStatus::kInvalid, 0};
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

std::vector<ItemResult> Participant::apply(const Batch& b) {
  std::vector<ItemResult> out;
  out.reserve(b.items.size());
  for (const Item& it : b.items) {
    std::optional<std::string> value;
    if ((it.flags & kDelete) == 0) value = it.value;
    log_.apply_at_primary(cluster::LogWrite{it.key, std::move(value), it.version});
    out.push_back({ItemStatus::kOk, it.version});
  }
  return out;
}

void Participant::unlock_one(uint64_t txid, const Item& it, bool commit) {
  if (commit && (it.flags & (kWrite | kApplyAtUnlock)) == (kWrite | kApplyAtUnlock)) {
    std::optional<std::string> value;
    bool known = (it.flags & kDelete) != 0;  // a delete carries nothing
    if ((it.flags & kHasValue) != 0) {       // dnl4: the value travels with the unlock
      value = it.value;
      known = true;
    } else if (auto lit = logged_.find(txid); !known && lit != logged_.end()) {  // dnl1: logged with the lock
      for (const Item& l : lit->second)
        if (l.key == it.key) value = l.value, known = true;
    }
    if (known) {
      log_.apply_at_primary(cluster::LogWrite{it.key, std::move(value), it.version});
    } else {
      spdlog::error("dandelion: the committed write of {} has no value here (transaction {:#x})", it.key, txid);
    }
  }
  if (!cluster::release_lock(ctx_.table(), ctx_.session(), it.key, txid))
    spdlog::warn("dandelion: unlock of {} by a transaction that does not hold it", it.key);
}

void Participant::unlock(const Batch& b) {
  for (const Item& it : b.items) unlock_one(b.txid, it, (it.flags & kCommit) != 0);
  logged_.erase(b.txid);
}

}  // namespace rdx::txn::dandelion
