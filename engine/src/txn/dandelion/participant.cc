#include "txn/dandelion/participant.h"

#include <spdlog/spdlog.h>

#include <algorithm>

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
  // The coordinator worker's transactions below its watermark have finished everywhere: forget their outcomes.
  if (auto c = outcomes_.find(cluster::writer_origin(b.txid)); c != outcomes_.end()) {
    c->second.erase(c->second.begin(), c->second.lower_bound(b.watermark));
    if (c->second.empty()) outcomes_.erase(c);
  }
  std::vector<ItemResult> out;
  out.reserve(b.items.size());
  auto existing = pending_.find(b.txid);
  // A recovery settled or fenced it (it never locks here now).
  if (remembered(b.txid) != nullptr || (existing != pending_.end() && existing->second.fenced)) {
    out.assign(b.items.size(), ItemResult{ItemStatus::kInvalid, 0});
    return out;
  }
  Pending fresh;
  Pending& p = existing == pending_.end() ? fresh : existing->second;
  const size_t held_before = p.items.size();
  for (const Item& it : b.items) {
    auto held = std::find_if(p.items.begin(), p.items.begin() + static_cast<ptrdiff_t>(held_before),
                             [&](const Item& h) { return h.key == it.key; });
    if (held != p.items.begin() + static_cast<ptrdiff_t>(held_before)) {
      out.push_back(lock_held(b.txid, *held, it));
      if (out.back().status != ItemStatus::kOk) p.all_locked = false;
      continue;
    }
    out.push_back(lock_one(b.txid, it));
    // MVCC: a write whose timestamp is below the key's read or write timestamp is refused (timestamp ordering).
    if (out.back().status == ItemStatus::kOk && hooks_ != nullptr && b.ts != 0 && (it.flags & kWrite) != 0 &&
        !hooks_->admit(ctx_, it.key, b.txid, b.ts)) {
      (void)cluster::release_lock(ctx_.table(), ctx_.session(), it.key, b.txid);
      ++stats_.lock_conflicts;
      out.back() = ItemResult{ItemStatus::kChanged, out.back().version};
    }
    if (out.back().status != ItemStatus::kOk) {
      p.all_locked = false;
      continue;
    }
    p.items.push_back(it);
    p.items.back().version = out.back().version;
  }
  std::erase_if(p.items, [](const Item& it) { return it.key.empty(); });  // (released by lock_held)
  p.participants = b.participants;
  p.ts = b.ts;
  if (existing == pending_.end() && !p.items.empty()) {
    p.since = Clock::now();
    pending_.emplace(b.txid, std::move(p));
  }
  return out;
}

ItemResult Participant::lock_held(uint64_t txid, Item& held, const Item& it) {
  const uint64_t read_version = (held.flags & kAbsentAtLock) != 0 ? 0 : held.version;
  if ((it.flags & kCheckVersion) != 0 && it.version != read_version) {
    ++stats_.lock_conflicts;
    (void)cluster::release_lock(ctx_.table(), ctx_.session(), held.key, txid);
    held.key.clear();  // (dropped from the transaction's items by the caller)
    return {ItemStatus::kChanged, read_version};
  }
  const uint64_t version = held.version;
  held = it;
  held.version = version;
  return {ItemStatus::kOk, version};
}

LockReadResult Participant::lock_read(const LockRead& l) {
  LockReadResult out;
  auto p = pending_.find(l.txid);
  if (remembered(l.txid) != nullptr || (p != pending_.end() && p->second.fenced)) {
    out.status = ItemStatus::kInvalid;
    return out;
  }
  bool fresh_lock = true;
  if (p != pending_.end())
    for (const Item& h : p->second.items) fresh_lock &= h.key != l.key;  // (two reads of one key in flight)
  if (fresh_lock) {
    const ItemResult r = lock_one(l.txid, Item{l.key, 0, 0, {}});
    if (r.status != ItemStatus::kOk) {
      out.status = r.status;
      if (r.status == ItemStatus::kLocked) out.holder_priority = holder_priority(l.key);
      return out;
    }
    if (p == pending_.end()) {
      p = pending_.emplace(l.txid, Pending{}).first;
      p->second.since = Clock::now();
      p->second.priority = l.priority;
    }
    p->second.items.push_back(Item{l.key, 0, r.version, {}});
  }
  uint64_t word = 0;
  const store::OpStatus st = ctx_.table().get(ctx_.session(), l.key, &out.value, &out.version, &word);
  out.present = st == store::OpStatus::kOk && !absent(word);
  if (!out.present) {
    out.value.clear();
    out.version = 0;
    for (Item& h : p->second.items)
      if (h.key == l.key) h.flags |= kAbsentAtLock;
  }
  return out;
}

uint64_t Participant::holder_priority(std::string_view key) {
  store::RecordRef ref = ctx_.table().find(ctx_.session(), key);
  if (!ref.valid()) return 0;
  const uint64_t w = ref.lock_word().load(std::memory_order_acquire);
  if (!locked(w)) return 0;
  for (const auto& [txid, p] : pending_)
    if (owner_bits(txid) == (w & kOwnerMask)) return p.priority;
  return 0;
}

void Participant::release_taken(const Batch& b, const std::vector<ItemResult>& results) {
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].status == ItemStatus::kOk)
      (void)cluster::release_lock(ctx_.table(), ctx_.session(), b.items[i].key, b.txid);
  pending_.erase(b.txid);
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
  for (const Item& it : b.items) {
    out.push_back(validate_one(b.txid, it));
    if (out.back().status == ItemStatus::kOk && hooks_ != nullptr && b.ts != 0 &&
        !hooks_->renew(ctx_, it.key, b.txid, it.version, b.ts)) {
      ++stats_.validation_failures;
      out.back().status = ItemStatus::kChanged;
    }
  }
  return out;
}

bool Participant::apply(const Batch& b) {
  auto p = pending_.find(b.txid);
  if (settled_by_recovery(b.txid, p)) return false;
  // Nothing of the transaction is pending here (its locks were taken at a predecessor primary, or dropped when this
  // node was deposed): it holds none of the locks and has none of the values, so it writes nothing, and the refusal
  // sends the coordinator to ask for the outcome instead of counting the writes applied.
  if (p == pending_.end()) {
    spdlog::warn("dandelion: apply of transaction {:#x}, which holds no locks here; refused", b.txid);
    return false;
  }
  for (const Item& it : b.items) {
    std::optional<std::string> value;
    if ((it.flags & kDelete) == 0 && !logged_value(it, &p->second, &value)) {
      spdlog::error("dandelion: the write of {} has no value here (transaction {:#x})", it.key, b.txid);
      continue;
    }
    log_.apply_at_primary(cluster::LogWrite{it.key, std::move(value), it.version});
  }
  p->second.applied = true;
  return true;
}

bool Participant::commits_unapplied_write(const Batch& b, const Pending& pending) {
  for (const Item& it : b.items) {
    if ((it.flags & (kCommit | kWrite | kApplyAtUnlock)) != (kCommit | kWrite)) continue;
    for (const Item& held : pending.items)
      if (held.key == it.key && (held.flags & kWrite) != 0) return true;
  }
  return false;
}

void Participant::unlock_one(uint64_t txid, const Item& it, bool commit, const Pending* pending) {
  if (commit && (it.flags & (kWrite | kApplyAtUnlock)) == (kWrite | kApplyAtUnlock)) {
    std::optional<std::string> value;
    const bool known = (it.flags & kDelete) != 0 || logged_value(it, pending, &value);  // a delete carries nothing
    if (known) {
      const auto apply = [&] { log_.apply_at_primary(cluster::LogWrite{it.key, std::move(value), it.version}); };
      if (hooks_ != nullptr) {
        hooks_->install(ctx_, it.key, txid, pending == nullptr ? 0 : pending->ts, apply);
      } else {
        apply();
      }
    } else {
      spdlog::error("dandelion: the committed write of {} has no value here (transaction {:#x})", it.key, txid);
    }
  }
  if (!cluster::release_lock(ctx_.table(), ctx_.session(), it.key, txid))
    spdlog::warn("dandelion: unlock of {} by a transaction that does not hold it", it.key);
}

bool Participant::unlock(const Batch& b) {
  auto p = pending_.find(b.txid);
  if (settled_by_recovery(b.txid, p)) return false;
  const Pending* pending = p == pending_.end() ? nullptr : &p->second;
  // A commit that applied its writes in a step of their own (dnl2, 2PL: no kApplyAtUnlock) releases them only where
  // they were applied. Where the apply did not arrive (lost, or sent to a successor primary), releasing would leave
  // the committed write missing here: the unlock is refused and the transaction fenced, so that this participant's
  // recovery decides it and writes the logged values, and the coordinator asks what it decided.
  if (pending != nullptr && !pending->applied && commits_unapplied_write(b, *pending)) {
    spdlog::warn("dandelion: commit unlock of transaction {:#x} before its writes were applied here; refused", b.txid);
    p->second.fenced = true;
    return false;
  }
  bool committed = false;
  for (const Item& it : b.items) {
    committed |= (it.flags & kCommit) != 0;
    unlock_one(b.txid, it, (it.flags & kCommit) != 0, pending);
  }
  // A recovery of another participant may still ask whether this one committed (until the watermark passes it).
  if (committed && pending != nullptr && pending->participants.size() > 1) remember(b.txid, TxnState::kCommitted);
  if (p != pending_.end()) {
    // 2PL: a lock taken by a read whose answer was lost is not in the coordinator's list. It stays pending here, so
    // that this participant's recovery releases it once it has been held too long.
    std::erase_if(p->second.items, [&](const Item& held) {
      return std::any_of(b.items.begin(), b.items.end(), [&](const Item& it) { return it.key == held.key; });
    });
    if (p->second.items.empty()) pending_.erase(p);
  }
  return true;
}

void Participant::inherit(const cluster::InheritedWrite& w) {
  Pending& p = pending_[w.txid];
  if (p.items.empty()) p.since = Clock::now();
  p.fenced = true;
  Item it{w.write.key, kWrite, w.write.version - 1, {}};  // (the version it was locked at: the write's - 1)
  if (w.write.value) {
    it.flags |= kHasValue;
    it.value = *w.write.value;
  } else {
    it.flags |= kDelete;
  }
  p.items.push_back(std::move(it));
  p.before[w.write.key] = w.before;
  p.participants = w.participants;
}

TxnState Participant::query(uint64_t txid) {
  if (auto p = pending_.find(txid); p != pending_.end()) {
    p->second.fenced = true;
    if (p->second.decision) return *p->second.decision ? TxnState::kCommitted : TxnState::kAborted;
    if (!p->second.before.empty()) return TxnState::kHidden;
    if (p->second.applied) return TxnState::kApplied;
    return p->second.all_locked ? TxnState::kLocked : TxnState::kPartial;
  }
  if (const TxnState* s = remembered(txid)) return *s;
  remember(txid, TxnState::kUnknown);  // its lock, if it still comes, is refused
  return TxnState::kUnknown;
}

void Participant::finish_recovered(uint64_t txid, bool committed) {
  pending_.erase(txid);
  remember(txid, committed ? TxnState::kCommitted : TxnState::kAborted);
}

void Participant::expire(Clock::time_point now) {
  for (auto c = outcomes_.begin(); c != outcomes_.end();) {
    std::erase_if(c->second, [&](const auto& e) { return now - e.second.at > kOutcomeRetention; });
    c = c->second.empty() ? outcomes_.erase(c) : std::next(c);
  }
  // A deposed primary's locks protect nothing (its successor never had them); nothing here is recovered any more.
  const auto shard = static_cast<uint32_t>(ctx_.topology().nodes[ctx_.self()].shard);
  if (ctx_.membership().primary(shard) != ctx_.self()) pending_.clear();
}

bool Participant::logged_value(const Item& it, const Pending* pending, std::optional<std::string>* value) {
  if (pending != nullptr)
    for (const Item& l : pending->items)
      if (l.key == it.key && (l.flags & kHasValue) != 0) {
        *value = l.value;
        return true;
      }
  return false;
}

// Fenced (a recovery decides it) or decided by one already: the coordinator's message must not act, and the
// refusal tells it to ask what the recovery decided.
bool Participant::settled_by_recovery(uint64_t txid, std::unordered_map<uint64_t, Pending>::iterator p) const {
  if (p != pending_.end()) return p->second.fenced;
  return remembered(txid) != nullptr;
}

void Participant::remember(uint64_t txid, TxnState s) {
  outcomes_[cluster::writer_origin(txid)][txid] = Outcome{s, Clock::now()};
}

const TxnState* Participant::remembered(uint64_t txid) const {
  auto c = outcomes_.find(cluster::writer_origin(txid));
  if (c == outcomes_.end()) return nullptr;
  auto e = c->second.find(txid);
  return e == c->second.end() ? nullptr : &e->second.state;
}

}  // namespace rdx::txn::dandelion
