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
  // A recovery settled it (it never locks here now), or a lock batch of it came already (a duplicate message).
  if (remembered(b.txid) != nullptr || pending_.count(b.txid) != 0) {
    out.assign(b.items.size(), ItemResult{ItemStatus::kInvalid, 0});
    return out;
  }
  Pending p;
  for (const Item& it : b.items) {
    out.push_back(lock_one(b.txid, it));
    if (out.back().status != ItemStatus::kOk) {
      p.all_locked = false;
      continue;
    }
    p.items.push_back(it);
    p.items.back().version = out.back().version;
  }
  if (!p.items.empty()) {
    p.participants = b.participants;
    p.since = Clock::now();
    pending_.emplace(b.txid, std::move(p));
  }
  return out;
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
  for (const Item& it : b.items) out.push_back(validate_one(b.txid, it));
  return out;
}

bool Participant::apply(const Batch& b) {
  auto p = pending_.find(b.txid);
  if (settled_by_recovery(b.txid, p)) return false;
  for (const Item& it : b.items) {
    std::optional<std::string> value;
    if ((it.flags & kDelete) == 0 && !logged_value(it, p == pending_.end() ? nullptr : &p->second, &value)) {
      spdlog::error("dandelion: the write of {} has no value here (transaction {:#x})", it.key, b.txid);
      continue;
    }
    log_.apply_at_primary(cluster::LogWrite{it.key, std::move(value), it.version});
  }
  if (p != pending_.end()) p->second.applied = true;
  return true;
}

void Participant::unlock_one(uint64_t txid, const Item& it, bool commit, const Pending* pending) {
  if (commit && (it.flags & (kWrite | kApplyAtUnlock)) == (kWrite | kApplyAtUnlock)) {
    std::optional<std::string> value;
    const bool known = (it.flags & kDelete) != 0 || logged_value(it, pending, &value);  // a delete carries nothing
    if (known) {
      log_.apply_at_primary(cluster::LogWrite{it.key, std::move(value), it.version});
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
  bool committed = false;
  for (const Item& it : b.items) {
    committed |= (it.flags & kCommit) != 0;
    unlock_one(b.txid, it, (it.flags & kCommit) != 0, pending);
  }
  // A recovery of another participant may still ask whether this one committed (until the watermark passes it).
  if (committed && pending != nullptr && pending->participants.size() > 1) remember(b.txid, TxnState::kCommitted);
  if (p != pending_.end()) pending_.erase(p);
  return true;
}

TxnState Participant::query(uint64_t txid) {
  if (auto p = pending_.find(txid); p != pending_.end()) {
    p->second.fenced = true;
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
