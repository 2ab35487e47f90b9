#pragma once
// One-sided execution reads (RCC's READ phase over one-sided RDMA): a coordinator reads a remote key's record
// straight from its primary's memory with one READ, at the record's offset in the primary's store region
// (cluster::kStoreRegion), and validates the image itself (store/record.h: version word == trailer, even, the key it
// asked for, not retired). It learns the offset the first time it reads the key, from a locate message that the
// primary answers as a read plus where the record lives; later reads of the key are one READ each, until the record
// moves (an update that outgrew its block, a delete) or the key's primary changes: then it locates the key again.
//
// Such a read is as fresh as an RPC read of the primary's latest value, never fresher, and may be older when the
// primary was deposed meanwhile (it cannot check its leases one-sidedly): protocols that use it validate every read
// at commit over RPC at the current primary (OCC), which catches both.
//
// On tcp the target's CPU executes the READ (the transport emulates it and counts it as emulated).
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/msg_ids.h"
#include "cluster/worker_context.h"
#include "txn/cc.h"

namespace rdx::txn {

class RemoteRecords {
 public:
  RemoteRecords(cluster::WorkerContext& ctx, TxnCounters& counters) : ctx_(ctx), counters_(counters) {}
  Status start();
  // A read of `key` at its primary `primary` (not this node): one-sided when the record's place is known, else the
  // locate message. kUnavailable when the primary cannot be reached or refuses.
  rpc::Task<Read> read(const std::string& key, uint16_t primary);

  // Records larger than this are read over RPC (a READ lands in one slot of the endpoint's scratch memory).
  static constexpr uint32_t kSlotBytes = 4096;
  static constexpr size_t kMaxCached = 1 << 16;  // places remembered per worker (forgotten all at once beyond)
  static constexpr int kTornRetries = 3;         // READs of a record being written before asking over RPC

 private:
  static constexpr rpc::MsgType kLocate = cluster::msgs::kTxnFamily.at(1);
  struct Place {
    uint16_t node = 0;
    uint64_t offset = 0;
    uint32_t length = 0;
  };
  void serve_locate(const rpc::Incoming& in);
  rpc::Task<Read> locate(const std::string& key, uint16_t primary);
  // nullopt: the cached place is no longer the record's (or the READ failed): locate again.
  rpc::Task<std::optional<Read>> read_at(const std::string& key, const Place& place);
  std::optional<uint32_t> take_slot();

  cluster::WorkerContext& ctx_;
  TxnCounters& counters_;
  std::unordered_map<std::string, Place> places_;
  std::vector<uint32_t> free_slots_;  // offsets in scratch()
};

}  // namespace rdx::txn
