#pragma once
// The message-id table: every RPC message type of rdxd belongs to exactly one range, owned by one service or one
// protocol. Services have their range here; each protocol gets its range in its registry line, inside its family's
// block. A protocol names its messages by offset within its range (rpc::MsgRange::at), so a copy of a protocol
// registered under another name with another range runs beside the original without a clash. Ranges are checked
// for overlaps when rdxd starts (server/node.cc) and by a test; Rpc::on refuses a type registered twice.
#include "rpc/rpc.h"

namespace rdx::cluster::msgs {

// Services (fixed).
inline constexpr rpc::MsgRange kKvApi{1, 15};       // the native single-key client API (cluster/kv_api.h)
inline constexpr rpc::MsgRange kBench{16, 16};      // the benchmark service (bench/service.h)
inline constexpr rpc::MsgRange kResp{32, 16};       // the Redis endpoint (DBSIZE asks other shards)
inline constexpr rpc::MsgRange kTxnFamily{48, 16};  // what every transaction protocol shares (txn/reads.h)
inline constexpr rpc::MsgRange kCluster{64, 16};    // heartbeats, topology hand-over (cluster/failure_detector.h),
                                                    // address books (server/address_relay.h)

// Family blocks: each protocol's registry line takes a range inside its family's block.
inline constexpr rpc::MsgRange kReplicationBlock{1000, 1000};  // replication/registry.cc
inline constexpr rpc::MsgRange kTxnBlock{2000, 1000};          // txn/registry.cc

// The fixed service ranges, for the overlap check.
inline constexpr rpc::MsgRange kServices[] = {kKvApi, kBench, kResp, kTxnFamily, kCluster};

}  // namespace rdx::cluster::msgs
