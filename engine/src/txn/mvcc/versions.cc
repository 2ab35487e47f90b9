#include "txn/mvcc/versions.h"

#include <algorithm>

#include "cluster/lockword.h"
#include "txn/per_node.h"

namespace rdx::txn::mvcc {

using namespace cluster::lockword;

std::shared_ptr<VersionTable> VersionTable::of(cluster::WorkerContext& ctx) { return per_node<VersionTable>(ctx); }

Ts VersionTable::now() { return Ts{realtime_ns(), 0}; }

VersionTable::Entry& VersionTable::entry(cluster::WorkerContext& ctx, std::string_view key, const StoredVersion& cur) {
  // A new view of this node's shard (ShardViewWatch): every key counts as written and read now.
  if (view_watch_.changed(ctx)) {
    entries_.clear();
    floor_ = std::max(floor_, now());
  }
  auto it = entries_.find(std::string(key));
  if (it == entries_.end()) {
    if (entries_.size() >= kMaxKeys) {
      // Bounded: keys no writer holds fold into the floor (their versions are forgotten, not their timestamps).
      std::erase_if(entries_, [this](const auto& e) {
        if (e.second.writer != 0) return false;
        floor_ = std::max({floor_, e.second.wts, e.second.rts});
        return true;
      });
    }
    Entry e;
    e.wts = e.rts = floor_;
    e.version = cur.version;
    e.present = cur.present;
    return entries_.emplace(std::string(key), std::move(e)).first->second;
  }
  Entry& e = it->second;
  if (e.present != cur.present || e.version != cur.version) {
    // Written behind the table's back (a single-key write, a coordinator recovery): written and read now, after
    // every timestamp the key had; the versions before it are not known.
    Ts t = std::max(now(), Ts{std::max(e.wts.ns, e.rts.ns) + 1, 0});
    e.wts = e.rts = t;
    e.version = cur.version;
    e.present = cur.present;
    e.olds.clear();
  }
  return e;
}

VersionRead VersionTable::read(cluster::WorkerContext& ctx, std::string_view key, Ts ts, bool planted) {
  std::lock_guard<std::mutex> lk(mu_);
  StoredVersion cur = stored_version(ctx, key);
  Entry& e = entry(ctx, key, cur);
  VersionRead out;
  const auto latest = [&] {
    out.status = cur.present ? VersionRead::Status::kOk : VersionRead::Status::kNotFound;
    out.version = cur.version;
    out.value = std::move(cur.value);
    return std::move(out);
  };
  // The planted anomaly: the latest version, perhaps written after ts (too new), and no read timestamp kept.
  if (planted) return latest();
  const uint64_t w = cur.lock_word;
  if (locked(w)) {
    // Held by a writer: only a reader before an admitted writer's timestamp may read around it (the others would
    // have to see its write, whose outcome is not known yet). An unknown holder (a single-key write) aborts it.
    if (e.writer == 0 || (w & kOwnerMask) != e.writer || !(ts < e.writer_ts)) {
      out.status = VersionRead::Status::kLocked;
      return out;
    }
  } else if (!readable(w)) {
    out.status = VersionRead::Status::kLocked;
    return out;
  }
  if (e.wts <= ts) {
    e.rts = std::max(e.rts, ts);
    return latest();
  }
  for (Old& o : e.olds) {
    if (!(o.wts <= ts)) continue;
    // (An older version's read timestamp need not be kept: a write after it is already installed, and it was
    // admitted only after every read of the version it replaced.)
    out.status = o.present ? VersionRead::Status::kOk : VersionRead::Status::kNotFound;
    out.version = o.present ? o.version : 0;
    out.value = o.value;
    return out;
  }
  return out;  // the version for ts is no longer kept: the read aborts
}

bool VersionTable::admit(cluster::WorkerContext& ctx, std::string_view key, uint64_t txid, int64_t ts) {
  std::lock_guard<std::mutex> lk(mu_);
  Entry& e = entry(ctx, key, stored_version(ctx, key));
  const Ts t{ts, txid};
  if (t < e.wts || t < e.rts) return false;  // (equal: the transaction's own read)
  e.writer = owner_bits(txid);
  e.writer_ts = t;
  return true;
}

bool VersionTable::renew(cluster::WorkerContext& ctx, std::string_view key, uint64_t txid, uint64_t version,
                         int64_t ts) {
  std::lock_guard<std::mutex> lk(mu_);
  // Checked again under the mutex: a writer is admitted under it after it locked the record, so either the writer
  // sees the raised read timestamp or this sees its lock.
  const StoredVersion cur = stored_version(ctx, key);
  if (!read_still_current(cur, txid, version)) return false;
  Entry& e = entry(ctx, key, cur);
  const Ts t{ts, txid};
  if (!(e.wts < t)) return false;  // written after the transaction's timestamp: not what it should have read
  e.rts = std::max(e.rts, t);
  return true;
}

void VersionTable::install(cluster::WorkerContext& ctx, std::string_view key, uint64_t txid, int64_t ts,
                           const std::function<void()>& apply) {
  std::lock_guard<std::mutex> lk(mu_);
  StoredVersion before = stored_version(ctx, key);
  Entry& e = entry(ctx, key, before);
  e.olds.insert(e.olds.begin(), Old{e.wts, before.version, before.present, std::move(before.value)});
  if (e.olds.size() > kVersionsKept - 1) e.olds.resize(kVersionsKept - 1);
  apply();
  const StoredVersion after = stored_version(ctx, key);
  Ts t{ts, txid};
  // (The planted anomaly commits without a timestamp, and a recovery may have reset the key meanwhile: the new
  // version still comes after every timestamp of the key.)
  if (!(std::max(e.wts, e.rts) < t)) t = Ts{std::max(e.wts.ns, e.rts.ns) + 1, txid};
  e.wts = e.rts = t;
  e.version = after.version;
  e.present = after.present;
  e.writer = 0;
}

}  // namespace rdx::txn::mvcc
