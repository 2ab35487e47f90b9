#pragma once
// What a protocol of any family may use on its worker thread (implemented by the server's Worker): the RPC layer
// (messages and one-sided operations), the scheduler, the node's table, the topology, this node's membership view
// and the batched local reads. Protocols never touch sockets or queue pairs: everything goes through rpc().
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>

#include "cluster/local_reads.h"
#include "cluster/membership.h"
#include "cluster/topology.h"
#include "rpc/rpc.h"
#include "store/hashtable.h"

namespace rdx::cluster {

// The region every node registers its store's arena as: record offsets (store::RecordRef::arena_offset) are offsets
// in it, so a peer reaches a record with a one-sided READ at RemotePtr{node, kStoreRegion, offset}.
inline constexpr transport::RegionId kStoreRegion = 1;

class WorkerContext {
 public:
  virtual ~WorkerContext() = default;
  virtual rpc::Rpc& rpc() = 0;
  virtual rpc::Scheduler& sched() = 0;
  virtual store::HashTable& table() = 0;
  virtual store::Session& session() = 0;
  virtual const Topology& topology() const = 0;
  virtual uint16_t self() const = 0;  // this node's id
  virtual uint16_t worker_index() const = 0;
  // This worker's connection to the same-index worker of node `node`, if it is up.
  virtual std::optional<transport::ConnId> peer(uint16_t node) const = 0;
  virtual Membership& membership() = 0;
  virtual LocalReads& local_reads() = 0;
  // A new id, unique in the cluster, for a writer that takes record locks (transactions, single-key writes): the
  // process's incarnation (16 bits), node (10 bits), worker (6 bits), sequence (32 bits). Record locks keep its low
  // 48 bits as their owner; id >> 32 names the coordinator worker (and its incarnation).
  virtual uint64_t next_writer_id() = 0;
};

// Parts of a writer id (WorkerContext::next_writer_id): the node that made it; and its origin (incarnation, node,
// worker), which the ids of one worker share, in the order it issued them.
inline uint16_t writer_node(uint64_t id) { return static_cast<uint16_t>((id >> 38) & 0x3ff); }
inline uint64_t writer_origin(uint64_t id) { return id >> 32; }
inline uint16_t writer_worker(uint64_t id) { return static_cast<uint16_t>((id >> 32) & 0x3f); }

// The primary of `key`'s shard in this node's current view, and whether this node holds a replica of it.
inline uint16_t primary_of(WorkerContext& ctx, std::string_view key) {
  return ctx.membership().primary(ctx.topology().shard_of_key(key));
}
// Whether this node may answer as its shard's primary for something it read or decided by `after`: it is the
// primary of its view, its copy is complete, and it held leases from a majority of the data nodes until then
// (Leases::authority), so no successor can have served meanwhile; and it has not resigned to hand its shard over.
inline bool serves_as_primary(WorkerContext& ctx, std::chrono::steady_clock::time_point after) {
  Membership& m = ctx.membership();
  const auto shard = static_cast<uint32_t>(ctx.topology().nodes[ctx.self()].shard);
  return m.in_sync() && !m.resigning() && m.primary(shard) == ctx.self() && m.leases().authority(after);
}
// Whether a backup's read of its own copy, begun with lease `ticket`, counts: it held the leases of every other data
// node until `after` (cluster/leases.h), and it has not resigned to hand its shard over (the others may exclude a
// resigned node without waiting those leases out: replication/primary_backup/handover.cc).
inline bool backup_read_covered(WorkerContext& ctx, uint64_t ticket, std::chrono::steady_clock::time_point after) {
  const Membership& m = ctx.membership();
  return !m.resigning() && m.leases().covers(ticket, after);
}
// A view of `shard` another node reported (a heartbeat answer, an election's announcement): installed when its
// primary is a member of the shard and it is newer (Membership::learn_view). True when installed.
inline bool learn_view(WorkerContext& ctx, uint32_t shard, ShardView v) {
  const Topology& t = ctx.topology();
  if (shard >= t.shards.size() || v.primary >= t.nodes.size() || t.nodes[v.primary].shard != static_cast<int>(shard))
    return false;
  return ctx.membership().learn_view(shard, v, static_cast<int>(shard) == t.nodes[ctx.self()].shard, ctx.self());
}
// Whether this node has lost `node` itself, as elections count it: the failure detector suspects it, its connection is
// down, this node excluded it, or it resigned as its shard's primary (it is handing its shard over).
inline bool lost_peer(WorkerContext& ctx, uint16_t node) {
  const Membership& m = ctx.membership();
  return m.suspected(node) || !ctx.peer(node) || m.member(node) == MemberState::kFailed || m.resigned(node);
}
// Waits `d`, or until the node is stopping: for waits that only keep bookkeeping alive (a vote's fence, a finished
// transaction's outcome kept for its participants' recovery). A stopping node's workers drain every timer before
// they stop (server/worker.cc), and must not wait these out.
inline rpc::Task<void> linger(WorkerContext& ctx, std::chrono::steady_clock::duration d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (!ctx.membership().stopping()) {
    const auto left = until - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) break;
    co_await ctx.sched().sleep_for(std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(200)));
  }
}
// Answers a remote read as this shard's primary: reads, then answers kUnavailable unless serves_as_primary held
// until the read ended (a deposed primary's copy may be stale).
rpc::Task<void> answer_read_as_primary(WorkerContext& ctx, rpc::ReplyTo to, std::string key, ReadMode mode);
inline bool is_replica_of(const Topology& t, uint16_t node, std::string_view key) {
  return t.nodes[node].shard == static_cast<int>(t.shard_of_key(key));
}

}  // namespace rdx::cluster
