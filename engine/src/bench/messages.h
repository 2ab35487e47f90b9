#pragma once
// The benchmark service's messages (bench/service.h serves them in rdxd; rdx-bench sends them).
//   kBenchLoad     write units [begin, end) of a workload's initial data through this worker's transactions
//   kBenchRun      run N coroutines of the workload for a duration (with optional locality-switch overrides and
//                  history recording) and answer with per-type counts, latency histograms, the ledger and the
//                  one-sided operations this worker's transport executed for peers meanwhile (tcp emulation)
//   kBenchHistory  page through the recorded history (JSON lines, see checker/history_io.h)
//   kBenchCheck    run the workload's invariant check against the merged ledger
//   kBenchProgress (u64 run id) -> (u8 state, u64 committed): the transactions the run with that id (chosen by
//                  rdx-bench, sent in kBenchRun) committed on this worker so far; state 0 = not this worker's
//                  current or last run (committed 0), 1 = running, 2 = ended
#include <cstdint>

#include "cluster/msg_ids.h"

namespace rdx::bench {

enum BenchMsg : rpc::MsgType {
  kBenchLoad = cluster::msgs::kBench.at(0),
  kBenchRun = cluster::msgs::kBench.at(1),
  kBenchHistory = cluster::msgs::kBench.at(2),
  kBenchCheck = cluster::msgs::kBench.at(3),
  kBenchProgress = cluster::msgs::kBench.at(4),
};

// Locality switches a run may override on the workers it runs on (-1 = keep the topology's setting).
struct BenchSwitches {
  int8_t local_backup_reads = -1;
  int8_t ht_batching = -1;
  int8_t validation_off = 0;  // test-only planted anomaly: the checker must catch it
};

}  // namespace rdx::bench
