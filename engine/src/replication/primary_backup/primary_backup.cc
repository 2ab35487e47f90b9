#include "replication/primary_backup/primary_backup.h"

#include <spdlog/spdlog.h>

#include "cluster/failure_detector.h"

namespace rdx::replication::primary_backup {

using cluster::MemberState;
using rpc::Task;

namespace {
constexpr auto kConnectGrace = std::chrono::seconds(2);
}  // namespace

std::unique_ptr<ReplicationNode> make_node(const NodeEnv& env) { return std::make_unique<PbNode>(env); }

std::unique_ptr<ReplicationProtocol> PbNode::make_worker(cluster::WorkerContext& ctx) {
  return std::make_unique<PbWorker>(*this, ctx);
}

std::string PbNode::recovery_state() const { return recovery_.status(); }

PbWorker::PbWorker(PbNode& node, cluster::WorkerContext& ctx)
    : node_(node),
      ctx_(ctx),
      msgs_(node.env().msgs),
      turns_(ctx.sched()),
      recovery_(ctx, node.recovery(), node.env().msgs) {
  on_membership_change();
}

Status PbWorker::start() {
  auto& rpc = ctx_.rpc();
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kGet), [this](const rpc::Incoming& in) { serve_get(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kWrite), [this](const rpc::Incoming& in) { serve_write(in); }));
  // Replicated writes need only "done": they are ackable messages, acknowledged by smart acks (one ack covers every
  // consecutive id applied since the last flush). A malformed batch is not acknowledged: its sender excludes this
  // node, which then recovers (a sender that cannot be understood must not be trusted with this copy).
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kReplicate), [this](const rpc::Incoming& in) {
    auto b = LogBatch::decode(in.payload);
    if (!b) return;
    if (b->mode == cluster::LogMode::kApply) {
      apply_hidden(*b);
    } else {
      hold(*b);
    }
    ctx_.rpc().ack(in.reply_to());
  }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kExcluded), [this](const rpc::Incoming& in) { serve_excluded(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kResolve), [this](const rpc::Incoming& in) {
    auto b = LogBatch::decode(in.payload);
    if (!b) return;
    if (b->mode == cluster::LogMode::kApply) {
      make_readable(*b);
    } else {
      resolve_held(*b);
      ctx_.rpc().ack(in.reply_to());
    }
  }));
  return recovery_.start();
}

void PbWorker::on_peer_lost(uint16_t node) {
  // A backup this node can no longer reach (its connection broke, or it stopped answering heartbeats) misses, or may
  // miss, the writes this node coordinates: exclude it. A primary cannot be excluded: without it its shard is
  // unavailable (the node reports not ready) until it returns.
  const cluster::Topology& t = ctx_.topology();
  const cluster::NodeSpec& lost = t.nodes[node];
  if (lost.role != cluster::Role::kData || t.primary_of(static_cast<uint32_t>(lost.shard)) == node) return;
  rpc::spawn(exclude(node, "unreachable"));
}

// A replica that comes back rejoins on its own (recovery.h); the connection alone proves nothing about its copy.
void PbWorker::on_peer_back(uint16_t node) {
  spdlog::debug("primary-backup: worker {} reconnected to {} ({})", ctx_.worker_index(),
                ctx_.topology().nodes[node].name, cluster::member_state_name(ctx_.membership().member(node)));
}

// The replica set of every shard, recomputed when the membership changes (not per write): the members other than
// the primary that are not excluded, and this node itself when it is one of them.
void PbWorker::on_membership_change() {
  const cluster::Topology& t = ctx_.topology();
  seen_generation_ = ctx_.membership().generation();
  // Writes still waiting for an excluded replica's acknowledgement stop waiting: it no longer counts.
  for (const cluster::NodeSpec& n : t.nodes)
    if (n.id != ctx_.self() && n.role == cluster::Role::kData && ctx_.membership().member(n.id) == MemberState::kFailed)
      if (auto conn = ctx_.peer(n.id)) ctx_.rpc().abandon_calls(*conn);
  backups_.assign(t.shards.size(), {});
  for (size_t s = 0; s < t.shards.size(); ++s) {
    const auto& members = t.shards[s].members;
    for (size_t i = 1; i < members.size(); ++i)
      if (ctx_.membership().member(members[i]) != MemberState::kFailed || members[i] == ctx_.self())
        backups_[s].push_back(members[i]);
  }
}

// Agreed exclusion: before this node commits a write without `node`, every other data node that answers has
// excluded it too (revoked it and waited out the leases it granted). So a node that excluded `node` and then
// restarts (forgetting it) cannot let `node` read a copy that missed this node's writes: the others still refuse it
// leases and answer its heartbeats "excluded", and it recovers. The others exclude in parallel with this node's own
// wait for its grant to end; one that does not answer within a few lease periods is not waited for (it is down or
// cut off itself).
Task<void> PbWorker::exclude(uint16_t node, std::string why) {
  if (node == ctx_.self() || ctx_.membership().member(node) == MemberState::kFailed) co_return;
  ctx_.membership().leases().revoke(node);
  if (!node_.env().faults.unilateral_exclusion) co_await announce_exclusion(node);
  const bool excluded = co_await cluster::exclude_after_lease(ctx_, node);
  if (!excluded) co_return;
  spdlog::warn("primary-backup: replica {} {}; excluded until it rejoins", ctx_.topology().nodes[node].name, why);
  on_membership_change();
}

Task<void> PbWorker::announce_exclusion(uint16_t node) {
  const std::chrono::milliseconds timeout = 3 * ctx_.membership().leases().duration() + std::chrono::seconds(1);
  rpc::Writer w;
  w.put(node);
  std::vector<uint16_t> asked;
  std::vector<Task<rpc::Response>> calls;
  for (uint16_t n : cluster::other_data_nodes(ctx_.topology(), ctx_.self())) {
    auto conn = n == node ? std::nullopt : ctx_.peer(n);
    if (!conn) continue;
    asked.push_back(n);
    calls.push_back(ctx_.rpc().call_task(*conn, msgs_.at(kExcluded), w.data(), timeout));
  }
  auto answers = co_await rpc::when_all(std::move(calls));
  for (size_t i = 0; i < asked.size(); ++i)
    if (answers[i].status != Code::kOk)
      spdlog::warn("primary-backup: {} did not confirm the exclusion of {} ({})", ctx_.topology().nodes[asked[i]].name,
                   ctx_.topology().nodes[node].name, code_name(answers[i].status));
}

// Another node excluded `node`: exclude it here too (no further announcement), then confirm.
void PbWorker::serve_excluded(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const auto node = rd.get<uint16_t>();
  const cluster::Topology& t = ctx_.topology();
  if (!rd.done() || node >= t.nodes.size() || node == ctx_.self() || node == in.peer_node ||
      t.nodes[node].role != cluster::Role::kData || t.primary_of(static_cast<uint32_t>(t.nodes[node].shard)) == node)
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);  // (a primary is never excluded)
  rpc::spawn([](PbWorker* self, rpc::ReplyTo to, uint16_t n, uint32_t from) -> Task<void> {
    const bool now = co_await cluster::exclude_after_lease(self->ctx_, n);
    if (now) {
      spdlog::warn("primary-backup: replica {} excluded by {}; excluded here too until it rejoins",
                   self->ctx_.topology().nodes[n].name, self->ctx_.topology().nodes[from].name);
      self->on_membership_change();
    }
    const bool excluded = self->ctx_.membership().member(n) == MemberState::kFailed;
    self->ctx_.rpc().respond(to, excluded ? Code::kOk : Code::kAborted);
  }(this, in.reply_to(), node, in.peer_node));
}

// This worker's connection to `node`. A replica that has not been excluded but is not connected yet (it just
// joined, or the cluster is starting) gets a moment to connect; an excluded or dead one does not.
Task<std::optional<transport::ConnId>> PbWorker::connection_to(uint16_t node) {
  auto deadline = std::chrono::steady_clock::now() + kConnectGrace;
  for (;;) {
    if (auto conn = ctx_.peer(node)) co_return conn;
    if (ctx_.membership().member(node) == MemberState::kFailed || std::chrono::steady_clock::now() > deadline)
      co_return std::nullopt;
    co_await ctx_.sched().sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace rdx::replication::primary_backup
