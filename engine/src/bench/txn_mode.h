#pragma once
// rdx-bench's transactional mode: the workload runs inside the cluster's workers (bench/service.h);
// rdx-bench loads the data, starts the runs, collects statistics and histories, and runs the checker and the
// workload's invariant check.
#include <string>
#include <vector>

namespace rdx::bench {

struct TxnOptions {
  std::string config;
  std::string workload;  // e.g. "smallbank:accounts=10000"
  double duration_s = 10;
  unsigned coroutines = 8;         // per worker of every coordinating node
  std::vector<std::string> nodes;  // coordinating nodes (default: every data node)
  bool load = false;
  unsigned load_keys_per_txn = 0;  // > 0: load in transactions recorded in the history (exact initial versions)
  std::string history_path;        // record the history, write it here and check it
  std::string local_backup_reads = "topology";  // on | off | topology
  std::string ht_batching = "topology";
  bool validation_off = false;  // test-only planted anomaly
  std::string json_path;
  unsigned long long seed = 42;
  double connect_timeout_s = 30;
};

int run_txn(const TxnOptions& o);

}  // namespace rdx::bench
