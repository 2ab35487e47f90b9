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
      turns_(ctx.sched(), node.key_tickets()),
      recovery_(ctx, node.recovery(), node.undecided(), node.env().msgs) {
  on_membership_change();
}

Status PbWorker::start() {
  auto& rpc = ctx_.rpc();
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kGet), [this](const rpc::Incoming& in) { serve_get(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kWrite), [this](const rpc::Incoming& in) { serve_write(in); }));
  // Replicated writes need only "done": they are ackable messages, acknowledged by smart acks (one ack covers every
  // consecutive id applied since the last flush). A malformed batch is not acknowledged: its sender excludes this
  // node, which then recovers (a sender that cannot be understood must not be trusted with this copy).
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kReplicate), [this](const rpc::Incoming& in) { serve_replicate(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kExcluded), [this](const rpc::Incoming& in) { serve_excluded(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kVote), [this](const rpc::Incoming& in) { serve_vote(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kNewView), [this](const rpc::Incoming& in) { serve_new_view(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kWithdraw), [this](const rpc::Incoming& in) { serve_withdraw(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kResign), [this](const rpc::Incoming& in) { serve_resign(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kResync), [this](const rpc::Incoming& in) {
    rpc::Reader rd(in.payload);
    const auto view = rd.get<uint64_t>();
    if (!rd.done()) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
    resync_for(view, fmt::format(
                         "{} says a write it replicated here did not commit",
                         in.peer_node < ctx_.topology().nodes.size() ? ctx_.topology().nodes[in.peer_node].name : "?"));
    ctx_.rpc().respond(in.reply_to(), Code::kOk);
  }));
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
  // miss, the writes this node coordinates: exclude it. The primary of this node's shard: elect another (worker 0
  // runs elections, election.cc); a primary of another shard is its members' business.
  const cluster::Topology& t = ctx_.topology();
  const cluster::NodeSpec& lost = t.nodes[node];
  if (lost.role != cluster::Role::kData) return;
  const auto shard = static_cast<uint32_t>(lost.shard);
  // Writes forwarded to a lost primary fail now (their outcome unknown) instead of at their timeout (forward.h).
  if (ctx_.membership().primary(shard) == node)
    if (auto conn = ctx_.peer(node)) ctx_.rpc().abandon_calls(*conn);
  if (ctx_.membership().primary(shard) != node) {
    rpc::spawn(
        [](PbWorker* self, uint16_t n) -> Task<void> { (void)co_await self->exclude(n, "unreachable"); }(this, node));
  } else if (lost.shard == t.nodes[ctx_.self()].shard && ctx_.worker_index() == 0) {
    rpc::spawn(elect(node));
  }
}

// A replica that comes back rejoins on its own (recovery.h); the connection alone proves nothing about its copy. A
// primary that had resigned and is back (restarted, its successor never elected) is a live primary again.
void PbWorker::on_peer_back(uint16_t node) {
  ctx_.membership().forget_resignation(node);
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
  auto views = std::make_shared<std::vector<uint64_t>>();
  for (uint32_t s = 0; s < t.shards.size(); ++s) {
    const cluster::ShardView view = ctx_.membership().view(s);
    views->push_back(view.packed());
    const uint16_t primary = view.primary;
    for (uint16_t m : t.shards[s].members)
      if (m != primary && (ctx_.membership().member(m) != MemberState::kFailed || m == ctx_.self()))
        backups_[s].push_back(m);
  }
  views_ = std::move(views);
}

// The shards' members changed (Node::apply_topology marked the added and removed ones excluded): new replica sets.
// A shard of this node whose primary was removed elects another (worker 0), as when a primary is lost.
void PbWorker::on_topology_change() {
  on_membership_change();
  const cluster::Topology& t = ctx_.topology();
  const auto shard = static_cast<uint32_t>(t.nodes[ctx_.self()].shard);
  const uint16_t primary = ctx_.membership().primary(shard);
  if (ctx_.worker_index() == 0 && t.nodes[primary].role == cluster::Role::kRemoved) rpc::spawn(elect(primary));
}

// Agreed exclusion: before this node commits a write without `node`, every other data node that answers has
// excluded it too (revoked it and waited out the leases it granted), and they are with this node a majority of the
// data nodes. So a node that excluded `node` and then restarts (forgetting it) cannot let `node` read a copy that
// missed this node's writes: the others still refuse it leases and answer its heartbeats "excluded", and it
// recovers; and an election (election.cc), which needs a majority too, always hears of it from one of them and never
// makes `node` the primary. The others exclude in parallel with this node's own wait for its grant to end; one that
// does not answer within a few lease periods is not waited for (it is down or cut off itself). Returns whether
// `node` is excluded; false leaves it counted (writes that need it fail).
Task<bool> PbWorker::exclude(uint16_t node, std::string why) {
  if (node == ctx_.self()) co_return false;
  if (ctx_.membership().member(node) == MemberState::kFailed) co_return true;
  ctx_.membership().leases().revoke(node);
  size_t agreed = cluster::data_node_count(ctx_.topology());  // (the planted fault skips the agreement)
  if (!node_.env().faults.unilateral_exclusion) agreed = 1 + co_await announce_exclusion(node);
  if (agreed < cluster::majority_of_data_nodes(ctx_.topology())) {
    spdlog::warn("primary-backup: only {} data nodes agreed to exclude {} ({}); it stays counted", agreed,
                 ctx_.topology().nodes[node].name, why);
    co_return false;
  }
  const bool excluded = co_await cluster::exclude_after_lease(ctx_, node);
  if (excluded) {
    spdlog::warn("primary-backup: replica {} {}; excluded until it rejoins", ctx_.topology().nodes[node].name, why);
    on_membership_change();
  }
  co_return ctx_.membership().member(node) == MemberState::kFailed;
}

Task<size_t> PbWorker::announce_exclusion(uint16_t node) {
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
  size_t confirmed = 0;
  for (size_t i = 0; i < asked.size(); ++i) {
    if (answers[i].status == Code::kOk) {
      ++confirmed;
    } else {
      spdlog::warn("primary-backup: {} did not confirm the exclusion of {} ({})", ctx_.topology().nodes[asked[i]].name,
                   ctx_.topology().nodes[node].name, code_name(answers[i].status));
    }
  }
  co_return confirmed;
}

// Another node excluded `node`: exclude it here too (no further announcement), then confirm.
void PbWorker::serve_excluded(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const auto node = rd.get<uint16_t>();
  const cluster::Topology& t = ctx_.topology();
  // (Only from a data node of this node's epoch: a removed one, cut off from the others, would exclude them all.)
  if (!rd.done() || node >= t.nodes.size() || node == ctx_.self() || node == in.peer_node ||
      t.nodes[node].role != cluster::Role::kData || in.peer_node >= t.nodes.size() ||
      t.nodes[in.peer_node].role != cluster::Role::kData ||
      ctx_.membership().primary(static_cast<uint32_t>(t.nodes[node].shard)) == node)
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);  // (a primary is deposed by an election)
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
