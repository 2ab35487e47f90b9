// Primary failover: when the members of a shard lose its primary, an in-sync backup takes its place.
//
// Who decides: a majority of the data nodes (a consensus among the nodes themselves, so pods need no coordination
// service). A candidate asks every other data node for its vote in a new view of the shard; a node votes once per
// view, only for a member it has not excluded (an excluded member may have missed committed writes: agreed
// exclusions have a majority too, so every election hears of them), and only if it has lost the old primary itself.
// Before it answers, the voter excludes the old primary and waits out the lease it granted it (cluster/leases.h).
// The old primary answers reads and commits writes only while it holds leases from a majority of the data nodes
// (cluster::serves_as_primary): once a majority voted, it cannot, even if it was only paused and runs again.
//
// The winner has every write its predecessor committed: each reached every replica still counted, and the winner
// was one. Writes its predecessor left hidden (replicated, not yet shown) may or may not have been acknowledged; the
// winner shows them all (an outcome the client could not know either way). It then installs the view and tells
// every data node; the other members of the shard copy it again (recovery.h), since they may hold writes of the old
// primary that the winner never had. Heartbeat answers carry views too, so a node that missed the announcement
// (or restarted) learns it within a heartbeat.
//
// A round starts with a pre-vote (as Raft's PreVote): would a majority vote? It changes nothing anywhere, so one
// node that merely lost touch with a live primary (a starved process, a cut link) cannot depose it: only when a
// majority has lost it do the votes, and their exclusions, follow.
//
// Candidates go in member order after the old primary, two timeouts apart, so usually one runs; a failed round
// (votes split, or a candidate that dies) is retried after a random delay in a higher view.
#include <spdlog/spdlog.h>

#include <random>

#include "cluster/failure_detector.h"
#include "cluster/lockword.h"
#include "replication/primary_backup/primary_backup.h"
#include "rpc/codec.h"

namespace rdx::replication::primary_backup {

using cluster::MemberState;
using cluster::ShardView;
using rpc::Task;

Task<void> PbWorker::elect(uint16_t deposed) {
  if (electing_ || !ctx_.membership().leases().enabled()) co_return;  // leases are what makes a deposition safe
  electing_ = true;
  const cluster::Topology& t = ctx_.topology();
  const auto shard = static_cast<uint32_t>(t.nodes[ctx_.self()].shard);
  const auto timeout = std::chrono::milliseconds(t.failure.timeout_ms);
  cluster::Membership& m = ctx_.membership();
  std::mt19937 rng(std::random_device{}());
  uint64_t waited_for_vote = 0;  // a view in which this node voted for another candidate, and waited for it
  for (int round = 0; !m.stopping(); ++round) {
    // This node's place among the possible candidates: members after the old primary, in order, not excluded.
    // (A removed primary is no member any more: then every member is a candidate, in order.)
    const cluster::Topology& now = ctx_.topology();
    const auto& members = now.shards[shard].members;
    const auto found = std::find(members.begin(), members.end(), deposed);
    const bool member = found != members.end();
    const size_t at = member ? static_cast<size_t>(found - members.begin()) : members.size() - 1;
    size_t rank = 0;
    for (size_t i = 1; i < members.size() + (member ? 0 : 1); ++i) {
      const uint16_t n = members[(at + i) % members.size()];
      if (n == ctx_.self()) break;
      if (m.member(n) != MemberState::kFailed) ++rank;
    }
    // A campaign lasts about a lease (the voters wait out their grants): the next candidate waits two per rank.
    const auto wait = round == 0 ? static_cast<int64_t>(rank) * 2 * timeout
                                 : std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(
                                       timeout.count() / 2, timeout.count() * 3 / 2)(rng));
    co_await ctx_.sched().sleep_for(wait);
    // Someone else won, this node's copy is not complete (it may not lead), or the primary answers again.
    if (m.primary(shard) != deposed || !m.in_sync() || !cluster::lost_peer(ctx_, deposed)) break;
    // This node voted for another candidate in a view not installed yet: give that campaign time to end first.
    const ShardView vote = m.last_vote(shard);
    if (vote.view > m.view(shard).view && vote.primary != ctx_.self() && vote.view != waited_for_vote) {
      waited_for_vote = vote.view;
      co_await ctx_.sched().sleep_for(2 * timeout);
      if (m.primary(shard) != deposed || !m.in_sync() || !cluster::lost_peer(ctx_, deposed)) break;
    }
    const uint64_t view = std::max(m.view(shard).view, m.last_vote(shard).view) + 1;
    const bool done = co_await campaign(shard, view, deposed);
    if (done) break;
  }
  electing_ = false;
}

// A vote's condition (the candidate's own included): no more leases to the old primary, and every one granted it
// has ended. Whether the old primary is excluded here.
Task<bool> PbWorker::cut_off(uint16_t old) {
  const bool now = co_await cluster::exclude_after_lease(ctx_, old);
  if (now) on_membership_change();
  co_return ctx_.membership().member(old) == MemberState::kFailed;
}

// One round: true when this node won, or the shard has another primary by now.
Task<bool> PbWorker::campaign(uint32_t shard, uint64_t view, uint16_t deposed) {
  const cluster::Topology& t = ctx_.topology();
  cluster::Membership& m = ctx_.membership();
  if (m.view(shard).view >= view || m.last_vote(shard).view >= view) co_return m.primary(shard) != deposed;
  spdlog::warn("election: {} stands for primary of shard {} (view {}) in place of {}", t.nodes[ctx_.self()].name, shard,
               view, t.nodes[deposed].name);
  const auto timeout = 3 * m.leases().duration() + std::chrono::seconds(1);
  const auto ask = [&](bool pre) {
    rpc::Writer w;
    w.put(shard).put(view).put(deposed).put(ctx_.self()).put(static_cast<uint8_t>(pre ? 1 : 0));
    std::vector<Task<rpc::Response>> calls;
    for (uint16_t n : cluster::other_data_nodes(t, ctx_.self())) {
      auto conn = n == deposed ? std::nullopt : ctx_.peer(n);
      if (conn) calls.push_back(ctx_.rpc().call_task(*conn, msgs_.at(kVote), w.data(), timeout));
    }
    return calls;
  };
  const auto count_ok = [](const std::vector<rpc::Response>& answers) {
    return static_cast<size_t>(
        std::count_if(answers.begin(), answers.end(), [](const rpc::Response& r) { return r.status == Code::kOk; }));
  };
  const size_t would = 1 + count_ok(co_await rpc::when_all(ask(true)));
  if (would < cluster::majority_of_data_nodes(t)) {
    spdlog::warn("election: only {} of the data nodes would replace {} as the primary of shard {}", would,
                 t.nodes[deposed].name, shard);
    co_return m.primary(shard) != deposed;
  }
  if (!m.vote(shard, view, ctx_.self())) co_return m.primary(shard) != deposed;
  std::vector<Task<rpc::Response>> calls = ask(false);
  // This node's own vote: the same wait for its grant to the old primary to end.
  calls.push_back([](PbWorker* self, uint16_t old) -> Task<rpc::Response> {
    const bool excluded = co_await self->cut_off(old);
    rpc::Response r;
    r.status = excluded ? Code::kOk : Code::kAborted;
    co_return r;
  }(this, deposed));
  const size_t votes = count_ok(co_await rpc::when_all(std::move(calls)));
  if (votes < cluster::majority_of_data_nodes(t)) {
    spdlog::warn("election: {} got {} of the {} votes it needs for view {} of shard {}", t.nodes[ctx_.self()].name,
                 votes, cluster::majority_of_data_nodes(t), view, shard);
    withdraw(shard, view);
    co_return m.primary(shard) != deposed;
  }
  // A newer view came meanwhile, or this node left sync (it learned that it may have missed writes): it may not lead.
  if (m.view(shard).view >= view) co_return true;
  if (!m.in_sync()) {
    withdraw(shard, view);
    co_return false;
  }
  // Won. Show what the old primary left hidden before serving as the primary (no reader may see it hidden here and
  // then shown: it is shown before this node answers anyone as the primary), but for the undecided writes of
  // transactions across shards: those stay locked for their transactions, whose participants decide them.
  // (They are handed to the transaction layer once the view is installed: take_inherited.)
  node_.undecided().inherit(lock_undecided());
  show_hidden_writes();
  if (!m.install_view(shard, ShardView{view, ctx_.self()})) co_return true;
  // A notice taken before the win (a view of a losing candidate, learned while campaigning) is moot: nobody that
  // voted excluded this node, and an exclusion needs a majority, so none did.
  (void)m.take_excluded_notice();
  m.note_promotion();
  on_membership_change();
  spdlog::warn("election: {} is the primary of shard {} (view {}, {} votes)", t.nodes[ctx_.self()].name, shard, view,
               votes);
  rpc::Writer nv;
  nv.put(shard).put(ShardView{view, ctx_.self()}.packed());
  for (uint16_t n : cluster::other_data_nodes(t, ctx_.self()))
    if (auto conn = ctx_.peer(n)) (void)ctx_.rpc().send_oneway(*conn, msgs_.at(kNewView), nv.span());
  co_return true;
}

void PbWorker::serve_vote(const rpc::Incoming& in) {
  const cluster::Topology& t = ctx_.topology();
  rpc::Reader r(in.payload);
  const auto shard = r.get<uint32_t>();
  const auto view = r.get<uint64_t>();
  const auto deposed = r.get<uint16_t>();
  const auto candidate = r.get<uint16_t>();
  const auto pre = r.get<uint8_t>();
  if (!r.done() || pre > 1 || shard >= t.shards.size() || deposed >= t.nodes.size() || candidate >= t.nodes.size() ||
      candidate == deposed || in.peer_node != candidate ||
      (t.nodes[deposed].shard != static_cast<int>(shard) && t.nodes[deposed].role != cluster::Role::kRemoved) ||
      t.nodes[candidate].shard != static_cast<int>(shard))
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  cluster::Membership& m = ctx_.membership();
  // No vote to depose a primary this node does not know as the primary, or still hears; none for a member it
  // excluded (it may have missed writes); one per view. A pre-vote only says whether this node would vote.
  if (ctx_.self() == deposed || m.primary(shard) != deposed || !cluster::lost_peer(ctx_, deposed) ||
      m.member(candidate) == MemberState::kFailed || view <= m.view(shard).view)
    return ctx_.rpc().respond(in.reply_to(), Code::kAborted);
  if (pre != 0) return ctx_.rpc().respond(in.reply_to(), Code::kOk);
  if (!m.vote(shard, view, candidate)) return ctx_.rpc().respond(in.reply_to(), Code::kAborted);
  rpc::spawn([](PbWorker* self, rpc::ReplyTo to, uint16_t old, uint32_t sh, uint64_t v) -> Task<void> {
    const bool excluded = co_await self->cut_off(old);
    self->ctx_.rpc().respond(to, excluded ? Code::kOk : Code::kAborted);
    // The vote's fence (serve_replicate) protects the candidate until it decides; a candidate decides within its
    // vote timeout. A view that was not installed by then never will be: the fence goes (this node refused every
    // write since, so it missed none that committed).
    cluster::Membership& mem = self->ctx_.membership();
    co_await cluster::linger(self->ctx_, 3 * mem.leases().duration() + std::chrono::seconds(2));
    if (mem.view(sh).view < v && mem.vote_fence(sh) == v) {
      spdlog::warn("election: view {} of shard {} was not installed; taking writes of view {} again", v, sh,
                   mem.view(sh).view);
      mem.lift_vote_fence(sh);
    }
  }(this, in.reply_to(), deposed, shard, view));
}

// A lost campaign: the fences of the votes for it (this node's own included) go, so the old view's writes are taken
// again at once (each fenced node refused every write since, so it missed none that committed).
void PbWorker::withdraw(uint32_t shard, uint64_t view) {
  cluster::Membership& m = ctx_.membership();
  if (m.view(shard).view < view && m.vote_fence(shard) == view) m.lift_vote_fence(shard);
  rpc::Writer w;
  w.put(shard).put(view);
  for (uint16_t n : cluster::other_data_nodes(ctx_.topology(), ctx_.self()))
    if (auto conn = ctx_.peer(n)) (void)ctx_.rpc().send_oneway(*conn, msgs_.at(kWithdraw), w.span());
}

void PbWorker::serve_withdraw(const rpc::Incoming& in) {
  rpc::Reader r(in.payload);
  const auto shard = r.get<uint32_t>();
  const auto view = r.get<uint64_t>();
  if (!r.done() || shard >= ctx_.topology().shards.size()) return;
  cluster::Membership& m = ctx_.membership();
  const ShardView vote = m.last_vote(shard);
  if (vote.view == view && vote.primary == in.peer_node && m.view(shard).view < view && m.vote_fence(shard) == view)
    m.lift_vote_fence(shard);
}

void PbWorker::serve_new_view(const rpc::Incoming& in) {
  const cluster::Topology& t = ctx_.topology();
  rpc::Reader r(in.payload);
  const auto shard = r.get<uint32_t>();
  const ShardView v = ShardView::unpack(r.get<uint64_t>());
  // Only the winner announces its own view.
  if (!r.done() || v.primary != in.peer_node) return;
  if (cluster::learn_view(ctx_, shard, v))
    spdlog::warn("election: {} is the primary of shard {} (view {})", t.nodes[v.primary].name, shard, v.view);
}

std::vector<cluster::InheritedWrite> PbWorker::lock_undecided() {
  using namespace cluster::lockword;
  std::vector<cluster::InheritedWrite> inherited;
  for (cluster::InheritedWrite& w : node_.undecided().take()) {
    for (;;) {
      store::RecordRef ref = ctx_.table().find(ctx_.session(), w.write.key);
      if (!ref.valid()) break;
      const uint64_t stored = ref.version();  // before the word, as in show_write
      uint64_t word = ref.lock_word().load(std::memory_order_acquire);
      if (retired(word)) continue;
      // Only the write itself, still hidden: a copy of the shard or a newer write replaced it otherwise.
      if ((word & kNotReadable) == 0 || stored != w.write.version || (word & kOwnerMask) != owner_bits(w.write.version))
        break;
      const uint64_t mine = (word & ~(kNotReadable | kOwnerMask)) | kLocked | owner_bits(w.txid);
      if (!ref.lock_word().compare_exchange_strong(word, mine, std::memory_order_acq_rel)) continue;
      inherited.push_back(std::move(w));
      break;
    }
  }
  spdlog::info("election: {} undecided transaction writes the old primary left hidden are inherited", inherited.size());
  return inherited;
}

void PbWorker::show_hidden_writes() {
  using cluster::lockword::kNotReadable;
  std::vector<store::ScanItem> items;
  size_t shown = 0;
  uint64_t cursor = 0;
  do {
    items.clear();
    cursor = ctx_.table().scan(ctx_.session(), cursor, 256, &items);
    for (const store::ScanItem& it : items)
      if ((it.lock_word & kNotReadable) != 0 && show_write(it.key, std::nullopt)) ++shown;
  } while (cursor != 0);
  spdlog::info("election: {} writes the old primary left hidden are shown", shown);
}

}  // namespace rdx::replication::primary_backup
