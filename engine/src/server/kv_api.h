#pragma once
// The single-key client API every node serves (native clients such as rdx-bench, and node-to-node forwarding).
// Request payloads: bytes key [, bytes value]. Response: status in the message header; payload u64 version
// [, bytes value] on success. Statuses: kOk, kNotFound, kInvalidArgument (malformed request, key/value too large),
// kUnavailable (not serving: recovering, primary unreachable, shutting down), kResourceExhausted (memory full).
#include <cstdint>
#include <string>

#include "common/status.h"
#include "rpc/rpc.h"

namespace rdx::server {

enum KvMsg : rpc::MsgType {
  kKvGet = 1,
  kKvPut = 2,
  kKvDel = 3,
};

struct KvResult {
  Code status = Code::kOk;
  uint64_t version = 0;
  std::string value;
  std::string error;  // human-readable detail when status != kOk
};

inline constexpr size_t kMaxKeyBytes = 1024;

}  // namespace rdx::server
