#pragma once
// rdx-bench's transactional mode: the workload runs inside the cluster's workers (bench/service.h);
// rdx-bench loads the data, starts the runs, collects statistics and histories, and runs the checker and the
// workload's invariant check.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/summary.h"

namespace rdx::bench {

struct TxnOptions {
  std::string config;
  std::string workload;  // e.g. "smallbank:accounts=10000"
  double duration_s = 10;
  unsigned coroutines = 8;         // per worker of every coordinating node
  std::vector<std::string> nodes;  // coordinating nodes (default: every data node)
  bool load = false;
  bool no_run = false;             // load only (requires load)
  unsigned load_keys_per_txn = 0;  // > 0: load in transactions recorded in the history (exact initial versions)
  std::string history_path;        // record the history, write it here and check it
  std::string local_backup_reads = "topology";  // on | off | topology
  std::string ht_batching = "topology";
  bool validation_off = false;  // test-only planted anomaly
  std::string json_path;
  unsigned long long seed = 42;
  double connect_timeout_s = 30;
  // The balance delta committed by earlier runs since another invocation loaded the data: the invariant check then
  // treats this run as starting at load with balance delta = base + this run's delta.
  std::optional<int64_t> ledger_base;
  double progress_interval_s = 0;  // 0: no progress lines
};

// Runs the workload; fills `summary` as it goes (the caller writes it) and returns the exit code.
int run_txn(const TxnOptions& o, Summary& summary);

}  // namespace rdx::bench
