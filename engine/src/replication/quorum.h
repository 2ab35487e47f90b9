#pragma once
// Quorum calls for the leaderless and quorum-based protocols (ABD; later Paxos): one request to each of several
// nodes, continuing once enough of them answered instead of waiting for the slowest (or a dead one). The requests
// still outstanding then run on in the background and their answers are dropped; a node that is not connected counts
// as answered with kUnavailable at once.
#include <coroutine>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cluster/worker_context.h"
#include "rpc/rpc.h"
#include "rpc/task.h"

namespace rdx::replication {

struct QuorumReply {
  uint16_t node = 0;
  rpc::Response response;
};

struct QuorumCall {
  std::vector<uint16_t> nodes;  // asked, each once (the caller answers for itself without a message)
  rpc::MsgType type = 0;
  std::string payload;
  size_t needed = 0;                                 // answers that count before the call returns
  std::function<bool(const rpc::Response&)> counts;  // which answers count (null: status kOk)
};

// The answers gathered when `needed` of them counted, or when every node answered (then fewer counted: the caller
// decides what that means). Answers arrive in any order; `counted` says how many of them counted.
struct QuorumResult {
  std::vector<QuorumReply> replies;
  size_t counted = 0;
};

rpc::Task<QuorumResult> quorum_call(cluster::WorkerContext& ctx, QuorumCall call);

}  // namespace rdx::replication
