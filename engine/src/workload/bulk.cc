#include "workload/bulk.h"

#include <algorithm>
#include <utility>

#include "workload/exec.h"

namespace rdx::workload {
namespace {

// Between attempts of a load write or a check read: 10 ms, doubling up to 320 ms, so the 50 attempts of a default
// run span about 15 s, longer than a node takes to be elected, excluded or to copy its shard back in.
std::chrono::milliseconds backoff(int attempt) { return std::chrono::milliseconds(10 << std::min(attempt - 1, 5)); }

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// One write of the load: a "load" transaction of `count` puts. True when committed.
rpc::Task<bool> write_once(txn::TxnService& svc, const KeyValues& kvs, size_t first, size_t count) {
  auto tx = svc.begin();
  tx->set_type("load");
  for (size_t i = first; i < first + count; ++i) tx->put(kvs[i].first, kvs[i].second);
  txn::Outcome o = co_await tx->commit();
  co_return o == txn::Outcome::kCommitted;
}

// Writes kvs as groups of `per_group` keys, retrying the groups that failed.
rpc::Task<Status> write_all(txn::TxnService& svc, const KeyValues& kvs, size_t keys_per_txn, int max_attempts,
                            LoadStats& stats) {
  const size_t per_group = std::max<size_t>(keys_per_txn, 1);
  std::vector<size_t> pending;  // group start offsets
  for (size_t i = 0; i < kvs.size(); i += per_group) pending.push_back(i);
  for (int attempt = 1; !pending.empty(); ++attempt) {
    if (attempt > max_attempts) {
      co_return error(Code::kUnavailable, "loading key {} failed {} times", kvs[pending.front()].first, max_attempts);
    }
    std::vector<rpc::Task<bool>> writes;
    for (size_t start : pending) {
      writes.push_back(write_once(svc, kvs, start, std::min(per_group, kvs.size() - start)));
    }
    std::vector<bool> ok = co_await rpc::when_all(std::move(writes));
    std::vector<size_t> failed;
    for (size_t i = 0; i < pending.size(); ++i) {
      if (!ok[i]) failed.push_back(pending[i]);
    }
    stats.retries += failed.size();
    pending = std::move(failed);
    if (!pending.empty()) co_await svc.pause(backoff(attempt));
  }
  co_return Status::ok();
}

// One read-only transaction over `keys`, retried while it aborts.
rpc::Task<Result<std::vector<txn::Read>>> read_keys(txn::TxnService& svc, std::vector<std::string> keys,
                                                    int max_attempts) {
  for (int attempt = 1; attempt <= max_attempts; ++attempt) {
    auto tx = svc.begin();
    tx->set_type("InvariantCheck");
    std::vector<txn::Read> reads = co_await read_all(*tx, keys, /*parallel=*/true);
    bool failed = false;
    for (const auto& r : reads) failed |= read_failed(r);
    if (failed) {
      tx->abort();
    } else {
      const TxStatus s = co_await commit(*tx);
      if (s == TxStatus::kCommitted) co_return reads;
    }
    co_await svc.pause(backoff(attempt));
  }
  co_return error(Code::kUnavailable, "reading {} keys (first {}) failed {} times", keys.size(),
                  keys.empty() ? "" : keys.front(), max_attempts);
}

}  // namespace

rpc::Task<Result<LoadStats>> load_units(txn::TxnService& svc, const Workload& w, uint64_t begin, uint64_t end,
                                        LoadOptions o) {
  LoadStats stats;
  const size_t per_group = std::max<size_t>(o.keys_per_txn, 1);
  const size_t wave = std::max<size_t>(o.in_flight, 1) * per_group;
  KeyValues kvs;
  auto sink = [&kvs](std::string_view k, std::string_view v) { kvs.emplace_back(k, v); };
  for (uint64_t unit = begin; unit < end;) {
    kvs.clear();
    while (unit < end && kvs.size() < wave) {  // whole units per wave: a unit's rows are loaded together
      w.load(unit, unit + 1, sink);
      ++unit;
    }
    Status s = co_await write_all(svc, kvs, o.keys_per_txn, o.max_attempts, stats);
    if (!s.is_ok()) co_return s;
    stats.records += kvs.size();
  }
  co_return stats;
}

rpc::Task<Status> scan_units(txn::TxnService& svc, uint64_t units, const UnitKeys& keys_of, const UnitVisit& visit,
                             ScanOptions o) {
  const uint64_t per_txn = std::max<size_t>(o.units_per_txn, 1);
  const uint64_t per_wave = per_txn * std::max<size_t>(o.txns_in_flight, 1);
  std::vector<std::string> unit_keys;
  for (uint64_t wave = 0; wave < units; wave += per_wave) {
    const uint64_t wave_end = std::min(units, wave + per_wave);
    // Keys of every unit in the wave, and where each unit's keys start in its transaction.
    std::vector<std::vector<std::string>> txn_keys;
    std::vector<std::vector<size_t>> offsets;
    for (uint64_t u = wave; u < wave_end; ++u) {
      if ((u - wave) % per_txn == 0) {
        txn_keys.emplace_back();
        offsets.emplace_back();
      }
      unit_keys.clear();
      keys_of(u, unit_keys);
      offsets.back().push_back(txn_keys.back().size());
      for (auto& k : unit_keys) txn_keys.back().push_back(std::move(k));
    }
    std::vector<rpc::Task<Result<std::vector<txn::Read>>>> reads;
    for (const auto& keys : txn_keys) reads.push_back(read_keys(svc, keys, o.max_attempts));
    auto results = co_await rpc::when_all(std::move(reads));
    for (size_t t = 0; t < results.size(); ++t) {
      if (!results[t].is_ok()) co_return results[t].status();
      const auto& all = *results[t];
      for (size_t i = 0; i < offsets[t].size(); ++i) {
        size_t from = offsets[t][i];
        size_t to = i + 1 < offsets[t].size() ? offsets[t][i + 1] : all.size();
        std::vector<std::string> keys(txn_keys[t].begin() + static_cast<ptrdiff_t>(from),
                                      txn_keys[t].begin() + static_cast<ptrdiff_t>(to));
        std::vector<txn::Read> unit_reads(all.begin() + static_cast<ptrdiff_t>(from),
                                          all.begin() + static_cast<ptrdiff_t>(to));
        visit(wave + t * per_txn + i, keys, unit_reads);
      }
    }
  }
  co_return Status::ok();
}

}  // namespace rdx::workload
