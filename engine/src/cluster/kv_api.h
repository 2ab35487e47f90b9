#pragma once
// The single-key client API every node serves to native clients (rdx-bench); each operation goes to the cluster's
// replication protocol.
// GET, PUT, DEL: request payloads bytes key [, bytes value]. Response: status in the message header; payload u64
// version [, bytes value] on success. Statuses: kOk, kNotFound, kInvalidArgument (malformed request, key/value too
// large), kUnavailable (not serving: recovering, primary unreachable, shutting down), kResourceExhausted (memory
// full).
// WRITE: bytes key, then a replication::Rmw (replication/ops.h: any read-modify-write, e.g. FAA or compare-and-set).
// Response: kOk with a replication::WriteResult whose own status says what the write did (kUnsupported when the
// cluster's replication protocol does not offer the operation); a malformed request gets kInvalidArgument and a
// reason, and is not applied.
#include <cstdint>
#include <string>

#include "cluster/msg_ids.h"
#include "common/status.h"
#include "rpc/rpc.h"

namespace rdx::cluster {

enum KvMsg : rpc::MsgType {
  kKvGet = msgs::kKvApi.at(0),
  kKvPut = msgs::kKvApi.at(1),
  kKvDel = msgs::kKvApi.at(2),
  kKvWrite = msgs::kKvApi.at(3),
};

struct KvResult {
  Code status = Code::kOk;
  uint64_t version = 0;
  std::string value;
  std::string error;  // human-readable detail when status != kOk

  static KvResult failed(Code c, std::string why) {
    KvResult r;
    r.status = c;
    r.error = std::move(why);
    return r;
  }
};

inline constexpr size_t kMaxKeyBytes = 1024;

}  // namespace rdx::cluster
