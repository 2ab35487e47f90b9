#include "cluster/failure_detector.h"

#include <spdlog/spdlog.h>

#include "cluster/msg_ids.h"
#include "rpc/codec.h"

namespace rdx::cluster {

using Clock = std::chrono::steady_clock;
using rpc::Task;

static_assert(kHeartbeat == msgs::kCluster.first);

FailureDetector::FailureDetector(WorkerContext& ctx, Hooks hooks)
    : ctx_(ctx), hooks_(std::move(hooks)), peers_(kMaxNodes) {
  for (size_t n = 0; n < peers_.size(); ++n) peers_[n].node = static_cast<uint16_t>(n);
}

Status FailureDetector::start() {
  return ctx_.rpc().on(kHeartbeat, [this](const rpc::Incoming& in) { serve(in); });
}

// A heartbeat from a data node gets a lease, unless this node excluded it or is about to: then "excluded". A
// heartbeat carries the sender's epoch and every answer this node's: a node that learns a peer runs an older epoch
// hands it the newer topology (on_older_peer), so an epoch spreads within a heartbeat, and a node this one's epoch
// does not have yet (added by a newer one) is answered "not found" with the epoch, which makes it do so.
void FailureDetector::serve(const rpc::Incoming& in) {
  const Topology& t = ctx_.topology();
  rpc::Reader r(in.payload);
  const auto epoch = r.get<uint32_t>();
  if (!r.done() || in.peer_node == ctx_.self()) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  rpc::Writer w;
  w.put(t.epoch);
  if (in.peer_node >= t.nodes.size() || t.nodes[in.peer_node].role != Role::kData)
    return ctx_.rpc().respond(in.reply_to(), Code::kNotFound, w.span());
  const auto node = static_cast<uint16_t>(in.peer_node);
  if (epoch < t.epoch) hooks_.on_older_peer(node);
  if (!ctx_.membership().leases().enabled()) return ctx_.rpc().respond(in.reply_to(), Code::kUnsupported);
  Membership& m = ctx_.membership();
  const bool granted = m.grant_lease(node, Clock::now());
  // The answer carries this node's view of its own shard, so every node learns a failover (and a restarted one
  // learns the views it missed) within a heartbeat.
  const auto shard = static_cast<uint32_t>(t.nodes[ctx_.self()].shard);
  w.put(shard).put(m.view(shard).packed());
  ctx_.rpc().respond(in.reply_to(), granted ? Code::kOk : Code::kAborted, w.span());
}

void FailureDetector::learn_view(uint16_t from, std::span<const std::byte> payload) {
  const Topology& t = ctx_.topology();
  rpc::Reader r(payload);
  const auto shard = r.get<uint32_t>();
  const ShardView v = ShardView::unpack(r.get<uint64_t>());
  // Only a view of the answering node's own shard (anything else is malformed).
  if (!r.done() || static_cast<int>(shard) != t.nodes[from].shard) return;
  if (cluster::learn_view(ctx_, shard, v))
    spdlog::warn("failure detector: {} reports view {} of shard {}: primary {}", t.nodes[from].name, v.view, shard,
                 t.nodes[v.primary].name);
}

Task<void> FailureDetector::beat(Peer& p, transport::ConnId conn) {
  Leases& leases = ctx_.membership().leases();
  const auto sent = Clock::now();
  rpc::Writer w;
  w.put(ctx_.topology().epoch);
  rpc::Response r = co_await ctx_.rpc().call(conn, kHeartbeat, w.span(), leases.duration());
  p.outstanding = false;
  rpc::Reader answer(rpc::as_bytes_of(r.payload));
  const auto epoch = answer.get<uint32_t>();
  if (!answer.ok()) co_return;  // silence (or garbage): suspicion comes with time
  if (epoch < ctx_.topology().epoch) hooks_.on_older_peer(p.node);
  if (r.status == Code::kNotFound && epoch > ctx_.topology().epoch) {
    // The peer runs a newer epoch without this node (a new one added it, or removed this one): it is alive, and
    // this node fetches that epoch instead of suspecting everybody that applied it.
    p.last_answer = Clock::now();
    hooks_.on_newer_peer(p.node);
    co_return;
  }
  if (r.status != Code::kOk && r.status != Code::kAborted) co_return;
  p.last_answer = Clock::now();
  p.answered = true;
  if (p.suspected) {
    p.suspected = false;
    ctx_.membership().set_suspected(p.node, false);
    spdlog::info("failure detector: {} answers again", ctx_.topology().nodes[p.node].name);
  }
  learn_view(p.node, answer.rest());
  if (r.status == Code::kOk) {
    leases.renew(p.node, sent);
  } else {
    leases.lose(p.node);
    ctx_.membership().note_excluded();
  }
}

Task<void> FailureDetector::run() {
  const FailureDetection& cfg = ctx_.topology().failure;
  const auto every = std::chrono::milliseconds(cfg.heartbeat_ms);
  const auto timeout = std::chrono::milliseconds(cfg.timeout_ms);
  auto last_round = Clock::now();
  while (!ctx_.membership().stopping()) {
    const auto now = Clock::now();
    // A round that comes late means this node did not run (paused, or starved of CPU): the peers' silence meanwhile
    // says nothing about them. Give them a fresh timeout instead of suspecting them all at once.
    const bool was_stalled = now - last_round > timeout / 2;
    last_round = now;
    // The other data nodes of the current epoch (a node added later is heartbeaten from then on).
    for (uint16_t n : other_data_nodes(ctx_.topology(), ctx_.self())) {
      Peer& p = peers_[n];
      if (was_stalled && p.answered) p.last_answer = std::max(p.last_answer, now);
      if (!p.outstanding) {
        if (auto conn = ctx_.peer(p.node)) {
          p.outstanding = true;
          rpc::spawn(beat(p, *conn));
        }
      }
      if (p.answered && !p.suspected && now - p.last_answer > timeout) {
        p.suspected = true;
        ctx_.membership().set_suspected(p.node, true);
        spdlog::warn("failure detector: {} has not answered for {} ms; suspected", ctx_.topology().nodes[p.node].name,
                     std::chrono::duration_cast<std::chrono::milliseconds>(now - p.last_answer).count());
        hooks_.on_suspect(p.node);
      }
    }
    co_await ctx_.sched().sleep_for(every);
  }
  while (std::any_of(peers_.begin(), peers_.end(), [](const Peer& p) { return p.outstanding; }))
    co_await ctx_.sched().sleep_for(every);  // the beats refer to peers_
}

void FailureDetector::forget(uint16_t node) {
  Peer& p = peers_[node];
  p.answered = false;
  p.suspected = false;
  ctx_.membership().set_suspected(node, false);
}

Task<bool> exclude_after_lease(WorkerContext& ctx, uint16_t node) {
  Membership& m = ctx.membership();
  m.leases().revoke(node);
  for (;;) {
    switch (m.try_exclude(node, Clock::now())) {
      case Membership::Exclusion::kExcluded:
        co_return true;
      case Membership::Exclusion::kAbandoned:
        co_return false;
      case Membership::Exclusion::kWait:
        break;
    }
    auto left = m.leases().granted_until(node) - Clock::now();
    co_await ctx.sched().sleep_for(
        std::clamp<Clock::duration>(left, std::chrono::milliseconds(1), std::chrono::milliseconds(10)));
  }
}

}  // namespace rdx::cluster
