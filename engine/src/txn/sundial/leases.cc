#include "txn/sundial/leases.h"

#include <algorithm>

#include "cluster/lockword.h"
#include "txn/per_node.h"

namespace rdx::txn::sundial {

using namespace cluster::lockword;

std::shared_ptr<LeaseTable> LeaseTable::of(cluster::WorkerContext& ctx) { return per_node<LeaseTable>(ctx); }

LeaseTable::Entry& LeaseTable::entry(cluster::WorkerContext& ctx, std::string_view key, const StoredVersion& cur) {
  // A new view of this node's shard (ShardViewWatch): every key counts as written and read now.
  if (view_watch_.changed(ctx)) {
    entries_.clear();
    floor_ = std::max(floor_, realtime_ns());
  }
  auto it = entries_.find(std::string(key));
  if (it == entries_.end()) {
    if (entries_.size() >= kMaxKeys) {
      // Bounded: keys fold into the floor (their leases only grow: a later write still comes after them). A key
      // a writer holds folds too: its install sets its lease past the floor anyway.
      for (const auto& [k, e] : entries_) floor_ = std::max(floor_, e.lease.rts);
      entries_.clear();
    }
    Entry e;
    e.lease = Lease{floor_, floor_};
    e.version = cur.version;
    e.present = cur.present;
    return entries_.emplace(std::string(key), e).first->second;
  }
  Entry& e = it->second;
  if (e.present != cur.present || e.version != cur.version) {
    // Written behind the table's back: written and read now, after every read its lease promised.
    const int64_t t = std::max(realtime_ns(), e.lease.rts + 1);
    e.lease = Lease{t, t};
    e.version = cur.version;
    e.present = cur.present;
  }
  return e;
}

LeaseRead LeaseTable::read(cluster::WorkerContext& ctx, std::string_view key) {
  std::lock_guard<std::mutex> lk(mu_);
  StoredVersion cur = stored_version(ctx, key);
  LeaseRead out;
  const uint64_t w = cur.lock_word;
  if (!locked(w) && !readable(w)) return out;  // kBusy
  Entry& e = entry(ctx, key, cur);
  // Held by a writer: its admission checked rts, which must not grow past it now; the value is still the latest
  // committed one (writes install at the unlock).
  if (!locked(w)) e.lease.rts = std::max({e.lease.rts, e.lease.wts, realtime_ns()});
  out.status = cur.present ? LeaseRead::Status::kOk : LeaseRead::Status::kNotFound;
  out.version = cur.version;
  out.value = std::move(cur.value);
  out.lease = e.lease;
  return out;
}

bool LeaseTable::admit(cluster::WorkerContext& ctx, std::string_view key, uint64_t /*txid*/, int64_t ts) {
  std::lock_guard<std::mutex> lk(mu_);
  const Entry& e = entry(ctx, key, stored_version(ctx, key));
  return ts > e.lease.rts && ts > e.lease.wts;
}

bool LeaseTable::renew(cluster::WorkerContext& ctx, std::string_view key, uint64_t txid, uint64_t version, int64_t ts) {
  std::lock_guard<std::mutex> lk(mu_);
  // Checked again under the mutex: a writer locks the record before its admission (under the mutex), so either it
  // sees the renewed rts or this sees its lock.
  const StoredVersion cur = stored_version(ctx, key);
  if (!read_still_current(cur, txid, version)) return false;
  Entry& e = entry(ctx, key, cur);
  // A version written after ts cannot be read at ts (a WATCH expectation, or a read whose wts the timestamp does
  // not include).
  if (e.lease.wts > ts) return false;
  e.lease.rts = std::max(e.lease.rts, ts);
  return true;
}

void LeaseTable::install(cluster::WorkerContext& ctx, std::string_view key, uint64_t /*txid*/, int64_t ts,
                         const std::function<void()>& apply) {
  std::lock_guard<std::mutex> lk(mu_);
  Entry& e = entry(ctx, key, stored_version(ctx, key));
  // (The planted anomaly commits without a timestamp, and a failover or the bound may have reset the lease since the
  // admission: the new version still comes after every read of the old one.)
  const int64_t t = ts > e.lease.rts && ts > e.lease.wts ? ts : std::max(e.lease.wts, e.lease.rts) + 1;
  apply();
  const StoredVersion after = stored_version(ctx, key);
  e.lease = Lease{t, t};
  e.version = after.version;
  e.present = after.present;
}

}  // namespace rdx::txn::sundial
