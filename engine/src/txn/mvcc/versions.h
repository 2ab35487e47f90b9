#pragma once
// MVCC's versions at a primary (RCC's MVCC keeps a few version slots per record): per key the timestamps of its
// latest version (written at, read up to) and copies of a few versions before it, beside the store, which keeps
// only the latest value. One table per node, shared by its workers (under a mutex): a key is read and locked by
// whichever worker its coordinator's connection reaches.
//
// Timestamps are (start time of the transaction, CLOCK_REALTIME ns; its id breaks ties). Timestamp ordering:
//  - a read at timestamp t returns the newest version written at or before t and raises the latest version's read
//    timestamp to t when it returns that one; a version older than the oldest kept aborts the read;
//  - a write at t is admitted (VersionHooks::admit, with its commit lock) only if the latest version was written
//    and read before t; from then until it installs, a reader after t aborts (it would have to see the write) and a
//    reader before t reads around it;
//  - a write installs (at the commit's unlock) as the new latest version, written and read at t;
//  - a read made without the table (one-sided) is renewed at the commit's validation (renew).
// A version the table does not know (a single-key write, a coordinator recovery's write, anything that bypassed
// it) counts as written and read now, with no older version kept; so does every key after this node became its
// shard's primary in a view after the first (the old primary's timestamps are lost: transactions that began
// before the takeover abort on the keys they touch), and every key dropped to bound the table (its timestamps fold
// into a floor that new entries start from).
#include <compare>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cluster/worker_context.h"
#include "txn/dandelion/participant.h"
#include "txn/per_node.h"

namespace rdx::txn::mvcc {

struct Ts {
  int64_t ns = 0;
  uint64_t txid = 0;
  auto operator<=>(const Ts&) const = default;
};

// Versions kept per key: the latest (in the store) and kVersionsKept - 1 copies of older ones.
inline constexpr size_t kVersionsKept = 4;
// Keys whose timestamps the table keeps before it folds them into its floor. An entry costs about 200 bytes beside
// the store, plus the older values it copies: 256 Ki keys hold SmallBank's 100k accounts (200k keys) in about 50 MiB.
inline constexpr size_t kMaxKeys = size_t{1} << 18;

struct VersionRead {
  // kLocked: held by a writer the read would have to see (a retry may find it installed); kAborted: the version
  // for the timestamp is no longer kept.
  enum class Status : uint8_t { kOk, kNotFound, kAborted, kLocked };
  Status status = Status::kAborted;
  uint64_t version = 0;
  std::string value;
};

class VersionTable final : public dandelion::VersionHooks {
 public:
  // The table of the node whose store is `ctx.table()` (made by its first worker, shared by the others).
  static std::shared_ptr<VersionTable> of(cluster::WorkerContext& ctx);

  // An execution read of `key` at `ts` at this node as the key's primary. `planted` (TxnOptions::validation_off):
  // the planted anomaly, which reads the latest version whatever its timestamp and records nothing.
  VersionRead read(cluster::WorkerContext& ctx, std::string_view key, Ts ts, bool planted);

  bool admit(cluster::WorkerContext& ctx, std::string_view key, uint64_t txid, int64_t ts) override;
  void install(cluster::WorkerContext& ctx, std::string_view key, uint64_t txid, int64_t ts,
               const std::function<void()>& apply) override;
  // A read of the latest version made without the table (a one-sided READ), checked at the commit's validation: the
  // key still holds `version`, nobody else holds it, and that version was written before (ts, txid), whose read
  // timestamp it then raises to. As a read through read() at that timestamp would have, had it returned the latest.
  bool renew(cluster::WorkerContext& ctx, std::string_view key, uint64_t txid, uint64_t version, int64_t ts) override;

 private:
  struct Old {
    Ts wts;
    uint64_t version = 0;
    bool present = false;
    std::string value;
  };
  struct Entry {
    Ts wts, rts;  // the latest version's: written at, read up to
    uint64_t version = 0;
    bool present = false;
    uint64_t writer = 0;  // owner bits of the admitted writer holding the key's lock (0: none)
    Ts writer_ts;
    std::vector<Old> olds;  // newest first (a vector: an empty std::deque allocates about 600 bytes)
  };
  // The key's entry, made or reset to agree with the store's latest version `cur`. Caller holds mu_.
  Entry& entry(cluster::WorkerContext& ctx, std::string_view key, const StoredVersion& cur);
  static Ts now();

  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  Ts floor_;
  ShardViewWatch view_watch_;
};

}  // namespace rdx::txn::mvcc
