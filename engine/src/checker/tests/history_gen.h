#pragma once
// Test histories: a strictly serializable history produced by actually running transactions one after another on an
// in-memory versioned map (each key's version grows by one per write, deletes included, like the store), with
// real-time intervals that either never overlap (serial) or overlap around each transaction's serialization point.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "txn/history.h"

namespace rdx::checker::testing {

struct GenOptions {
  size_t txns = 1000;
  size_t keys = 100;
  uint64_t seed = 1;
  bool overlap = false;       // intervals overlap (concurrent) but respect the serial order's real time
  double abort_rate = 0.05;   // aborted attempts (recorded reads, no versions created)
  double delete_rate = 0.05;  // fraction of writes that are deletes
  int max_ops = 4;            // keys per transaction: 1..max_ops
};

inline std::string key_name(size_t k) { return fmt::format("k{}", k); }

inline std::vector<txn::TxRecord> generate_history(const GenOptions& o) {
  std::mt19937_64 rng(o.seed);
  std::vector<uint64_t> current(o.keys, 0), last(o.keys, 0);  // version visible now (0 = absent), last created
  std::vector<txn::TxRecord> out;
  out.reserve(o.txns);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<size_t> chosen;
  for (size_t i = 0; i < o.txns; ++i) {
    txn::TxRecord r;
    r.id = i + 1;
    r.type = "gen";
    const int64_t point = 1000 * static_cast<int64_t>(i + 1);
    if (o.overlap) {
      r.start_ns = point - static_cast<int64_t>(rng() % 3000);
      r.end_ns = point + static_cast<int64_t>(rng() % 3000);
    } else {
      r.start_ns = point - 400;
      r.end_ns = point + 400;
    }
    r.committed = u(rng) >= o.abort_rate;
    chosen.clear();
    int ops = 1 + static_cast<int>(rng() % static_cast<uint64_t>(o.max_ops));
    while (chosen.size() < static_cast<size_t>(ops) && chosen.size() < o.keys) {
      size_t k = rng() % o.keys;
      if (std::find(chosen.begin(), chosen.end(), k) == chosen.end()) chosen.push_back(k);
    }
    for (size_t k : chosen) {
      double x = u(rng);
      bool read = x < 0.8, write = x >= 0.5;  // 50% read-only access, 30% read-modify-write, 20% blind write
      if (read) r.reads.push_back({key_name(k), current[k]});
      if (!write) continue;
      bool del = u(rng) < o.delete_rate;
      if (!r.committed) {
        r.writes.push_back({key_name(k), 0, del});
        continue;
      }
      r.writes.push_back({key_name(k), ++last[k], del});
      current[k] = del ? 0 : last[k];
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace rdx::checker::testing
