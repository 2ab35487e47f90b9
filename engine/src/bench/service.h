#pragma once
// Runs transactional workloads inside the node's workers (Dandelion's setup: clients co-located with the data, so
// local backup reads and hashtable batching apply), driven by rdx-bench over RPC (bench/messages.h).
#include <string>
#include <vector>

#include "bench/messages.h"
#include "rpc/rpc.h"
#include "server/service.h"
#include "txn/history.h"
#include "txn/service.h"
#include "workload/workload.h"

namespace rdx::bench {

// The benchmark service of rdxd (node->add_service(make_bench_service)); nothing without a transaction protocol.
Result<std::unique_ptr<server::Service>> make_bench_service(server::ServiceEnv& env);

class BenchService final : public server::Service {
 public:
  BenchService(cluster::WorkerContext& ctx, txn::TxnServiceImpl& txn) : ctx_(ctx), txn_(txn) {}
  Status start();

 private:
  struct RunParams {
    std::string spec;
    uint32_t duration_ms = 0;
    uint32_t coroutines = 0;
    uint64_t seed = 0;
    bool record = false;
    BenchSwitches switches;
    uint64_t run_id = 0;  // rdx-bench's id of the run, for kBenchProgress
  };
  rpc::Task<void> load(rpc::ReplyTo to, std::string spec, uint64_t begin, uint64_t end, uint32_t keys_per_txn);
  rpc::Task<void> run(rpc::ReplyTo to, RunParams p);
  rpc::Task<void> check(rpc::ReplyTo to, std::string spec, workload::Ledger merged);
  void serve_history(const rpc::Incoming& in);
  void serve_progress(const rpc::Incoming& in);

  cluster::WorkerContext& ctx_;
  txn::TxnServiceImpl& txn_;
  bool running_ = false;
  uint64_t run_id_ = 0;         // of the current or last run
  uint64_t run_committed_ = 0;  // transactions it committed so far
  std::vector<txn::TxRecord> history_;
};

}  // namespace rdx::bench
