#pragma once
// The execution-phase read optimistic protocols share (OCC-style: the latest value, even if a writer holds it;
// commit-time checks catch conflicts): at this node when it holds a usable copy of the key (its primary, or a
// backup with local backup reads on: Dandelion's strongly consistent reads from a local backup, safe because
// commit validates every read at the primary), else at the key's primary. Local reads are batched per worker-loop
// iteration (cluster/local_reads.h). The request handler lives in the transaction family's message range.
// With the READ phase one-sided (Primitives), a read at the primary is a one-sided READ (remote_records.h).
#include <string>

#include "cluster/msg_ids.h"
#include "cluster/worker_context.h"
#include "txn/cc.h"
#include "txn/remote_records.h"

namespace rdx::txn {

class ReadPath {
 public:
  ReadPath(cluster::WorkerContext& ctx, TxnCounters& counters, const TxnOptions& options, bool onesided)
      : ctx_(ctx), counters_(counters), options_(options), onesided_(onesided), remote_(ctx, counters) {}
  Status start();
  rpc::Task<Read> read(std::string key);
  // A read at the key's primary, another node (never this node's backup copy): one-sided when the READ phase is.
  // For protocols whose reads belong at the primary (MVCC, SUNDIAL) and which renew one-sided ones at commit.
  rpc::Task<Read> read_at_primary(std::string key);
  // The node that serves a read of `key` from this node: itself or the key's primary.
  bool reads_locally(std::string_view key, bool* at_backup) const;

 private:
  static constexpr rpc::MsgType kReadAtReplica = cluster::msgs::kTxnFamily.at(0);
  cluster::WorkerContext& ctx_;
  TxnCounters& counters_;
  const TxnOptions& options_;
  const bool onesided_;  // reads at the primary are one-sided READs
  RemoteRecords remote_;
};

}  // namespace rdx::txn
