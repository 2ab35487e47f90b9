#pragma once
// A single-key write sent to the node that orders its key (primary-backup's primary, CRAQ's head, a member of the
// key's shard): the request (bytes key, Rmw), its answer (kOk: WriteResult; a refusal), and both ends.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "cluster/kv_api.h"
#include "cluster/worker_context.h"
#include "replication/ops.h"
#include "rpc/rpc.h"
#include "rpc/task.h"

namespace rdx::replication {

// How long a forwarded write waits for its answer. Long: a write may wait in its key's queue at a busy node (many
// clients on a few keys, a loaded machine), which is no failure; a node the failure detector loses fails the calls
// to it at once instead (the protocols' on_peer_lost abandons them).
inline constexpr auto kForwardTimeout = std::chrono::seconds(30);

// Sends the write to `to` (what the messages call that node, e.g. "the key's primary") over `conn` as message
// `type`. Its WriteResult; kTimeout ("may or may not have taken effect") when the node did not answer (it was lost,
// or gave no answer within kForwardTimeout); its refusal as it gave it.
rpc::Task<WriteResult> forward_write(cluster::WorkerContext& ctx, transport::ConnId conn, rpc::MsgType type,
                                     const std::string& key, const Rmw& op, std::string_view to);

// The request's key and Rmw, or nullopt when it is malformed (an empty or oversized key, a bad Rmw, trailing bytes).
struct WriteRequest {
  std::string key;
  Rmw op;
};
std::optional<WriteRequest> decode_write_request(std::span<const std::byte> payload);

// Answers a forwarded write with its result.
void respond_write(rpc::Rpc& rpc, const rpc::ReplyTo& to, const WriteResult& result);

}  // namespace rdx::replication
