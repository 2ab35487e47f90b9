#pragma once
// The transaction service of one worker: the generic half of every transaction (its context, read-your-writes and
// repeatable reads within it, statistics, history recording) around the cluster's concurrency-control protocol,
// which does the rest (txn/cc.h). Made by the server for each worker when the topology names a protocol.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "txn/cc.h"
#include "txn/history.h"
#include "txn/reads.h"
#include "txn/txn.h"

namespace rdx::txn {

class TxnServiceImpl final : public TxnService {
 public:
  TxnServiceImpl(cluster::WorkerContext& ctx, cluster::ReplicaLog& log, const CcEntry& cc, Primitives primitives,
                 TxnOptions options);
  ~TxnServiceImpl() override;
  // Registers the handlers of the read path and of the protocol.
  Status start();

  std::unique_ptr<Transaction> begin(const DeclaredKeys* declared = nullptr) override;
  rpc::Task<Read> read_one(std::string key) override { return log_.read_committed(std::move(key)); }
  rpc::Task<void> pause(std::chrono::milliseconds d) override { co_await ctx_.sched().sleep_for(d); }

  const TxnOptions& options() const { return options_; }
  void set_options(const TxnOptions& o);
  const TxnCounters& counters() const { return counters_; }
  void reset_counters() { counters_ = TxnCounters{}; }
  // Finished transactions while options().record_history is on; the caller takes them.
  std::vector<TxRecord> take_history() { return std::move(history_); }
  const CcEntry& protocol() const { return cc_entry_; }

 private:
  friend class Tx;
  rpc::Task<Read> read(TxState& tx, std::string key);
  rpc::Task<Outcome> commit(TxState& tx);
  void abort(TxState& tx);
  void record(const TxState& tx, bool committed);

  cluster::WorkerContext& ctx_;
  cluster::ReplicaLog& log_;
  const CcEntry& cc_entry_;
  TxnOptions options_;
  TxnCounters counters_;
  ReadPath reads_;
  std::unique_ptr<ConcurrencyControl> cc_;
  std::vector<TxRecord> history_;
};

}  // namespace rdx::txn
