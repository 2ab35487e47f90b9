// Handover: a primary that is asked to stop (rdxd got SIGTERM: a pod deleted, rolled or drained) has another member
// of its shard elected before it goes, instead of leaving the others to notice its silence and wait out its leases.
//
// 1. It resigns: from then on it answers nothing as the primary (cluster::serves_as_primary), for good.
// 2. It tells every other data node (kResign, phase 0) and waits for their answers (bounded by a lease). A node that
//    heard it counts the old primary as lost for an election, and since it serves no more, excludes it without
//    waiting out the lease it granted it (Membership::try_exclude): the lease only guarded reads and commits it will
//    not make. Writes stay safe as in any failover: one it committed reached every counted replica, the winner too.
// 3. It asks the members of its shard to elect (kResign, phase 1): the usual election (election.cc), whose first
//    candidate runs at once; every voter has heard phase 0 by then, so the pre-vote does not fail on a voter that
//    still hears a live primary.
// 4. It waits until it learns the new view (bounded), then lets the node stop.
// With nobody to hand over to (no other member counted, leases off) it stops as it would have; so it does once every
// other member of its shard went away while it waited (they were all asked to stop at once).
#include <spdlog/spdlog.h>

#include "replication/primary_backup/primary_backup.h"
#include "rpc/codec.h"

namespace rdx::replication::primary_backup {

using cluster::Membership;
using cluster::MemberState;
using cluster::ShardView;
using rpc::Task;

namespace {
constexpr uint8_t kNoteResigned = 0;
constexpr uint8_t kElectNow = 1;
}  // namespace

void PbWorker::tick() {
  recovery_.tick();
  Membership& m = ctx_.membership();
  if (ctx_.worker_index() == 0 && m.handover() == Membership::Handover::kRequested) {
    m.set_handover(Membership::Handover::kUnderWay);
    rpc::spawn(hand_over());
  }
}

Task<void> PbWorker::hand_over() {
  const cluster::Topology& t = ctx_.topology();
  Membership& m = ctx_.membership();
  const auto shard = static_cast<uint32_t>(t.nodes[ctx_.self()].shard);
  const ShardView view = m.view(shard);
  bool successor = false;
  for (uint16_t n : t.shards[shard].members)
    successor = successor || (n != ctx_.self() && m.member(n) == MemberState::kInSync && ctx_.peer(n));
  if (view.primary != ctx_.self() || !m.in_sync() || !m.leases().enabled() || !successor) {
    m.set_handover(Membership::Handover::kDone);
    co_return;
  }
  const auto started = std::chrono::steady_clock::now();
  m.set_resigning();
  spdlog::warn("handover: {} resigns as the primary of shard {} (view {}) and has a successor elected",
               t.nodes[ctx_.self()].name, shard, view.view);
  const auto phase = [&](uint8_t what, bool own_shard_only) {
    rpc::Writer w;
    w.put(shard).put(view.packed()).put(what);
    std::vector<Task<rpc::Response>> calls;
    for (uint16_t n : cluster::other_data_nodes(t, ctx_.self())) {
      if (own_shard_only && t.nodes[n].shard != static_cast<int>(shard)) continue;
      if (auto conn = ctx_.peer(n))
        calls.push_back(ctx_.rpc().call_task(*conn, msgs_.at(kResign), w.data(), m.leases().duration()));
    }
    return rpc::when_all(std::move(calls));
  };
  (void)co_await phase(kNoteResigned, false);
  (void)co_await phase(kElectNow, true);
  // Waits for the new view, unless every other member of the shard went away meanwhile (the whole cluster is being
  // stopped, as when a StatefulSet is deleted or scaled to zero): then nobody is left to elect a successor.
  const auto electors_left = [&] {
    for (uint16_t n : t.shards[shard].members)
      if (n != ctx_.self() && ctx_.peer(n)) return true;
    return false;
  };
  const auto deadline = started + 3 * m.leases().duration() + std::chrono::seconds(1);
  while (m.primary(shard) == ctx_.self() && std::chrono::steady_clock::now() < deadline && electors_left())
    co_await ctx_.sched().sleep_for(std::chrono::milliseconds(2));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  if (m.primary(shard) != ctx_.self()) {
    spdlog::warn("handover: {} is the primary of shard {} (view {}), {} ms after {} resigned",
                 t.nodes[m.primary(shard)].name, shard, m.view(shard).view, took.count(), t.nodes[ctx_.self()].name);
  } else if (!electors_left()) {
    spdlog::warn("handover: every other member of shard {} stopped too; stopping after {} ms with no successor", shard,
                 took.count());
  } else {
    spdlog::warn("handover: no successor for shard {} within {} ms; stopping anyway (the others elect one)", shard,
                 took.count());
  }
  m.set_handover(Membership::Handover::kDone);
}

void PbWorker::serve_resign(const rpc::Incoming& in) {
  const cluster::Topology& t = ctx_.topology();
  rpc::Reader r(in.payload);
  const auto shard = r.get<uint32_t>();
  const ShardView v = ShardView::unpack(r.get<uint64_t>());
  const auto what = r.get<uint8_t>();
  if (!r.done() || what > kElectNow || shard >= t.shards.size() || v.primary >= t.nodes.size() ||
      v.primary != in.peer_node || t.nodes[v.primary].shard != static_cast<int>(shard))
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  Membership& m = ctx_.membership();
  // Only the primary of the view this node runs resigns it (an older one's word changes nothing here).
  if (m.view(shard) != v) return ctx_.rpc().respond(in.reply_to(), Code::kAborted);
  m.note_resigned(shard, v);
  if (what == kElectNow && t.nodes[ctx_.self()].shard == static_cast<int>(shard) && ctx_.worker_index() == 0)
    rpc::spawn(elect(v.primary));
  ctx_.rpc().respond(in.reply_to(), Code::kOk);
}

}  // namespace rdx::replication::primary_backup
