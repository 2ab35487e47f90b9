#pragma once
// SUNDIAL's logical leases at a primary: per key the lease [wts, rts] of its latest version (written at, readable up
// to), beside the store, which keeps the value. One table per node, shared by its workers (under a mutex): a key is
// read, locked and renewed by whichever worker its coordinator's connection reaches.
//  - A read returns the latest version with its lease and extends rts to now (CLOCK_REALTIME at the primary), unless
//    the key is locked by a writer (then the lease is returned as it is: the reader must renew at commit, which
//    fails while the writer holds the key or once it installed).
//  - A write at commit timestamp ts is admitted (VersionHooks::admit, with its commit lock) only if ts > rts (and
//    wts): every read of the version it replaces is ordered before it. While the key is locked its lease is not
//    extended (reads do not extend it, renewals fail), so the admission holds until the install.
//  - A renewal (VersionHooks::renew, at the commit's validation) of a read at ts succeeds if the key still holds the
//    version read and no other transaction locks it, and extends rts to ts.
//  - A write installs (at the commit's unlock) with wts = rts = ts.
// Leases only ever reach a physical time: rts is extended to the primary's clock or to a commit timestamp, which is
// at most the committing coordinator's clock (sundial.cc): strict serializability rests on that.
// A version the table does not know (a single-key write, a coordinator recovery's rewrite, anything that bypassed it)
// counts as written and read now; so does every key after this node became its shard's primary in a later view (the
// old primary's leases are not here) and every key dropped to bound the table (its lease folds into a floor that new
// entries start from: a later write still comes after every read the lease promised).
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cluster/worker_context.h"
#include "txn/dandelion/participant.h"
#include "txn/per_node.h"

namespace rdx::txn::sundial {

// Keys whose leases the table keeps before it folds them into its floor: an entry costs about 100 bytes (the key, two
// timestamps, a version, the hash node), so 256 Ki keys (SmallBank's 200k keys) take about 25 MiB per node.
inline constexpr size_t kMaxKeys = size_t{1} << 18;

struct Lease {
  int64_t wts = 0, rts = 0;  // CLOCK_REALTIME ns
};

struct LeaseRead {
  // kBusy: the record is in no state to be read (being inserted or handed over): the read aborts.
  enum class Status : uint8_t { kOk, kNotFound, kBusy };
  Status status = Status::kBusy;
  uint64_t version = 0;
  std::string value;
  Lease lease;
};

class LeaseTable final : public dandelion::VersionHooks {
 public:
  // The table of the node whose store is `ctx.table()` (made by its first worker, shared by the others).
  static std::shared_ptr<LeaseTable> of(cluster::WorkerContext& ctx);

  // An execution read of `key` at this node as its primary.
  LeaseRead read(cluster::WorkerContext& ctx, std::string_view key);

  bool admit(cluster::WorkerContext& ctx, std::string_view key, uint64_t txid, int64_t ts) override;
  void install(cluster::WorkerContext& ctx, std::string_view key, uint64_t txid, int64_t ts,
               const std::function<void()>& apply) override;
  bool renew(cluster::WorkerContext& ctx, std::string_view key, uint64_t txid, uint64_t version, int64_t ts) override;

 private:
  struct Entry {
    Lease lease;
    uint64_t version = 0;
    bool present = false;
  };
  // The key's entry, made or reset to agree with the store's latest version `cur`. Caller holds mu_.
  Entry& entry(cluster::WorkerContext& ctx, std::string_view key, const StoredVersion& cur);

  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  int64_t floor_ = 0;
  ShardViewWatch view_watch_;
};

}  // namespace rdx::txn::sundial
