#pragma once
// Transactional workloads for rdx-bench: SmallBank, TATP, TPC-C-lite, O(G,P) microbenchmarks and transactional YCSB
// A/B/C/F and RCC's.
//
// A Workload is immutable after construction and shared by every worker thread. The caller owns the mutable state:
// one Rng and one Ledger per worker thread (shared by that thread's coroutines, which never run in parallel).
//   make_workload("smallbank:accounts=100000,hot_percent=4")   -> the workload, or an error naming the bad parameter
//   load(...) / load_units()                                    -> its initial key/values (see loader.h to write them)
//   co_await w.run_one(svc, rng, ledger)                        -> ONE attempt of a transaction drawn from the mix
//   co_await w.check(svc, merged_ledger)                        -> the workload's invariants, after the run
// Every transaction is labelled with Transaction::set_type (the names in txn_types()), so histories and per-type
// statistics agree. run_one never retries: the runner decides what to do with kAborted / kUnavailable.
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/registry.h"
#include "common/status.h"
#include "rpc/task.h"
#include "txn/txn.h"

namespace rdx::workload {

// xoshiro256** (fast, 32 bytes of state), seeded through splitmix64; a UniformRandomBitGenerator.
class Rng {
 public:
  using result_type = uint64_t;
  explicit Rng(uint64_t seed);
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return std::numeric_limits<uint64_t>::max(); }
  uint64_t operator()() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  uint64_t below(uint64_t n);                                                 // uniform in [0, n), n > 0 (unbiased)
  uint64_t between(uint64_t lo, uint64_t hi);                                 // uniform in [lo, hi]
  double unit() { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }  // [0, 1)
  bool chance(double p) { return unit() < p; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

enum class TxStatus : uint8_t {
  kCommitted,
  kAborted,      // the protocol aborted it (conflict, failed validation); nothing applied; worth retrying
  kUnavailable,  // a read or the commit could not reach a replica (Transaction::outcome_unknown: it may have applied)
  kRolledBack,   // the transaction's own logic gave up (insufficient funds, TATP's missing rows); nothing applied
  kDataError,    // a stored value failed validation or a row that must exist was missing: a bug; see error
};
const char* tx_status_name(TxStatus s);

struct TxOutcome {
  uint16_t type = 0;  // index into Workload::txn_types()
  TxStatus status = TxStatus::kCommitted;
  std::string error;  // kDataError: which key and what was wrong
};

// Committed effects that invariants need, accumulated per worker thread and merged after the run. run_one adds to
// balance_delta only when commit() returned kCommitted, so that sum is exact; a commit that could not learn its
// outcome (kUnavailable) may or may not have applied, so its delta widens the range the invariant accepts.
struct Ledger {
  // SmallBank: money created (+) or destroyed (-) by committed transactions; TPC-C-lite: paid by committed Payments
  // (cents)
  int64_t balance_delta = 0;
  // The negative and positive deltas of transactions whose outcome is unknown: the true delta lies in
  // [balance_delta + unknown_down, balance_delta + unknown_up].
  int64_t unknown_down = 0, unknown_up = 0;
  void add_unknown(int64_t delta) { (delta < 0 ? unknown_down : unknown_up) += delta; }
  bool explains(int64_t observed_delta) const {
    return observed_delta >= balance_delta + unknown_down && observed_delta <= balance_delta + unknown_up;
  }
  // The run began on freshly loaded data. Checks relative to the loaded state (SmallBank's total) need it: an earlier
  // run on the same data moved money this ledger does not know of.
  bool starts_at_load = true;
  void merge(const Ledger& other) {
    balance_delta += other.balance_delta;
    unknown_down += other.unknown_down;
    unknown_up += other.unknown_up;
    starts_at_load = starts_at_load && other.starts_at_load;
  }
};

struct InvariantReport {
  bool checked = false;  // false: the workload has no invariant to check
  bool ok = true;
  std::string summary;                // one line, e.g. "total balance 123 == initial 100 + committed delta 23"
  std::vector<std::string> problems;  // missing or corrupt rows, mismatches (capped)
};

// Receives initial key/values; called synchronously from load().
using LoadSink = std::function<void(std::string_view key, std::string_view value)>;

class Workload {
 public:
  virtual ~Workload() = default;
  virtual const std::string& name() const = 0;
  // Effective parameters, defaults included (for reports), in declaration order.
  virtual const std::vector<std::pair<std::string, std::string>>& params() const = 0;
  // Transaction type names; TxOutcome::type indexes this.
  virtual const std::vector<std::string>& txn_types() const = 0;

  // Initial data in independent units (accounts, subscribers, keys): load(begin, end, sink) emits the key/values of
  // units [begin, end), deterministically, so workers can load disjoint ranges in parallel.
  virtual uint64_t load_units() const = 0;
  virtual void load(uint64_t begin, uint64_t end, const LoadSink& sink) const = 0;

  // One attempt of a transaction drawn from the mix, through the Transaction API.
  virtual rpc::Task<TxOutcome> run_one(txn::TxnService& svc, Rng& rng, Ledger& ledger) const = 0;

  // After the run, with no transaction in flight (anywhere in the cluster): reads the data back through `svc` and
  // verifies the workload's invariants against the merged ledger of all workers.
  virtual rpc::Task<InvariantReport> check(txn::TxnService& svc, const Ledger& merged) const = 0;
};

// "name" or "name:key=value,key=value". Names: smallbank, tatp, tpcc-lite, ogp (also o(G,P), e.g. o(4,2)), ycsb-a,
// ycsb-b, ycsb-c, ycsb-f, ycsb-rcc.
struct WorkloadSpec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> params;
};
Result<WorkloadSpec> parse_workload_spec(std::string_view text);

class ParamReader;
// The workloads of this build (common/registry.h).
struct WorkloadEntry {
  std::string_view name;
  std::string_view summary;
  std::unique_ptr<Workload> (*make)(ParamReader& params);
};
const Registry<WorkloadEntry>& workloads();

Result<std::unique_ptr<Workload>> make_workload(const WorkloadSpec& spec);
Result<std::unique_ptr<Workload>> make_workload(std::string_view spec_text);
// Every workload with its parameters, defaults and meaning (for --help).
std::string workload_help();

}  // namespace rdx::workload
