#pragma once
// State a protocol keeps per node beside its store (MVCC's versions, SUNDIAL's leases), shared by the node's workers.
#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "cluster/lockword.h"
#include "cluster/worker_context.h"

namespace rdx::txn {

// The node's T (the node whose store is `ctx.table()`), made by its first worker and shared by the others. By store:
// in-process test clusters run several nodes in one process. A weak reference, so a later node whose store reuses
// the address never gets a stopped node's state.
template <class T>
std::shared_ptr<T> per_node(cluster::WorkerContext& ctx) {
  static std::mutex mu;
  static std::map<const store::HashTable*, std::weak_ptr<T>> tables;
  std::lock_guard<std::mutex> lk(mu);
  std::erase_if(tables, [](const auto& t) { return t.second.expired(); });
  std::weak_ptr<T>& slot = tables[&ctx.table()];
  std::shared_ptr<T> t = slot.lock();
  if (!t) {
    t = std::make_shared<T>();
    slot = t;
  }
  return t;
}

// CLOCK_REALTIME in ns: the clock transactions' start times (TxState::start_ns) are read from.
inline int64_t realtime_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// A key's latest version in the store, as a per-node table of per-key timestamps checks it: absent (no record, or a
// delete) is version 0 with no value.
struct StoredVersion {
  bool present = false;
  uint64_t version = 0, lock_word = 0;
  std::string value;
};
inline StoredVersion stored_version(cluster::WorkerContext& ctx, std::string_view key) {
  StoredVersion c;
  const store::OpStatus st = ctx.table().get(ctx.session(), key, &c.value, &c.version, &c.lock_word);
  c.present = st == store::OpStatus::kOk && !cluster::lockword::absent(c.lock_word);
  if (!c.present) {
    c.value.clear();
    c.version = 0;
  }
  return c;
}

// Whether a read of a key at `version` by transaction `txid` still stands at the commit's validation, as a renewal
// checks it (VersionHooks::renew, under its table's mutex): the key holds that version, and no other transaction
// holds the key (nor is it in a state no read may see).
inline bool read_still_current(const StoredVersion& cur, uint64_t txid, uint64_t version) {
  using namespace cluster::lockword;
  if (locked(cur.lock_word)) {
    if ((cur.lock_word & kOwnerMask) != owner_bits(txid)) return false;
  } else if (!readable(cur.lock_word)) {
    return false;
  }
  return cur.version == version;
}

// Tells a per-node table of per-key timestamps when this node's shard entered a new view: the node has just become
// its primary (or is one again), and the timestamps the previous primary checked against are not here, so every key
// must count as written and read now. Not for the first view 0 a table sees (a new cluster: nothing before it).
class ShardViewWatch {
 public:
  bool changed(cluster::WorkerContext& ctx) {
    const auto shard = static_cast<uint32_t>(ctx.topology().nodes[ctx.self()].shard);
    const uint64_t view = ctx.membership().view(shard).view;
    if (view_ == view) return false;
    const bool first_view_zero = !view_ && view == 0;
    view_ = view;
    return !first_view_zero;
  }

 private:
  std::optional<uint64_t> view_;
};

}  // namespace rdx::txn
