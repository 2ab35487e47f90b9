#pragma once
// Runs transactional workloads inside the node's workers (Dandelion's setup: clients co-located with the data, so
// local backup reads and hashtable batching apply), driven by rdx-bench over RPC:
//   kBenchLoad     write units [begin, end) of a workload's initial data through this worker's transactions
//   kBenchRun      run N coroutines of the workload for a duration (with optional locality-switch overrides and
//                  history recording) and answer with per-type counts, latency histograms and the ledger
//   kBenchHistory  page through the recorded history (JSON lines, see checker/history_io.h)
//   kBenchCheck    run the workload's invariant check against the merged ledger
#include <string>
#include <vector>

#include "rpc/rpc.h"
#include "server/protocol.h"
#include "txn/history.h"
#include "txn/service.h"
#include "workload/workload.h"

namespace rdx::server {

// Locality switches a run may override on the workers it runs on (-1 = keep the topology's setting).
struct BenchSwitches {
  int8_t local_backup_reads = -1;
  int8_t ht_batching = -1;
  int8_t validation_off = 0;  // test-only planted anomaly: the checker must catch it
};

class BenchService {
 public:
  enum Msg : rpc::MsgType { kBenchLoad = 40, kBenchRun = 41, kBenchHistory = 42, kBenchCheck = 43 };

  BenchService(WorkerContext& ctx, txn::TxnServiceImpl& txn) : ctx_(ctx), txn_(txn) {}
  void start();
  bool running() const { return running_; }

 private:
  struct RunParams {
    std::string spec;
    uint32_t duration_ms = 0;
    uint32_t coroutines = 0;
    uint64_t seed = 0;
    bool record = false;
    BenchSwitches switches;
  };
  rpc::Task<void> load(rpc::ReplyTo to, std::string spec, uint64_t begin, uint64_t end, uint32_t keys_per_txn);
  rpc::Task<void> run(rpc::ReplyTo to, RunParams p);
  rpc::Task<void> check(rpc::ReplyTo to, std::string spec, workload::Ledger merged);
  void serve_history(const rpc::Incoming& in);

  WorkerContext& ctx_;
  txn::TxnServiceImpl& txn_;
  bool running_ = false;
  std::vector<txn::TxRecord> history_;
};

}  // namespace rdx::server
