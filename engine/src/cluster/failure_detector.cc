#include "cluster/failure_detector.h"

#include <spdlog/spdlog.h>

#include "cluster/msg_ids.h"
#include "rpc/codec.h"

namespace rdx::cluster {

using Clock = std::chrono::steady_clock;
using rpc::Task;

static_assert(kHeartbeat == msgs::kCluster.first);

FailureDetector::FailureDetector(WorkerContext& ctx, std::function<void(uint16_t)> on_suspect)
    : ctx_(ctx), on_suspect_(std::move(on_suspect)) {
  for (uint16_t n : other_data_nodes(ctx.topology(), ctx.self())) peers_.push_back(Peer{n});
}

Status FailureDetector::start() {
  return ctx_.rpc().on(kHeartbeat, [this](const rpc::Incoming& in) { serve(in); });
}

// A heartbeat from a data node gets a lease, unless this node excluded it or is about to: then "excluded".
void FailureDetector::serve(const rpc::Incoming& in) {
  const Topology& t = ctx_.topology();
  if (!in.payload.empty() || in.peer_node >= t.nodes.size() || in.peer_node == ctx_.self() ||
      t.nodes[in.peer_node].role != Role::kData)
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  if (!ctx_.membership().leases().enabled()) return ctx_.rpc().respond(in.reply_to(), Code::kUnsupported);
  const auto node = static_cast<uint16_t>(in.peer_node);
  Membership& m = ctx_.membership();
  const bool granted = m.grant_lease(node, Clock::now());
  // The answer carries this node's view of its own shard, so every node learns a failover (and a restarted one
  // learns the views it missed) within a heartbeat.
  const auto shard = static_cast<uint32_t>(t.nodes[ctx_.self()].shard);
  rpc::Writer w;
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
  rpc::Response r = co_await ctx_.rpc().call(conn, kHeartbeat, {}, leases.duration());
  p.outstanding = false;
  if (r.status != Code::kOk && r.status != Code::kAborted) co_return;  // silence: suspicion comes with time
  p.last_answer = Clock::now();
  p.answered = true;
  if (p.suspected) {
    p.suspected = false;
    ctx_.membership().set_suspected(p.node, false);
    spdlog::info("failure detector: {} answers again", ctx_.topology().nodes[p.node].name);
  }
  if (!r.payload.empty()) learn_view(p.node, rpc::as_bytes_of(r.payload));
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
    for (Peer& p : peers_) {
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
        on_suspect_(p.node);
      }
    }
    co_await ctx_.sched().sleep_for(every);
  }
  while (std::any_of(peers_.begin(), peers_.end(), [](const Peer& p) { return p.outstanding; }))
    co_await ctx_.sched().sleep_for(every);  // the beats refer to peers_
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
