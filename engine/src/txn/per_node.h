#pragma once
// State a protocol keeps per node beside its store (MVCC's versions, SUNDIAL's leases), shared by the node's workers.
#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>

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

}  // namespace rdx::txn
