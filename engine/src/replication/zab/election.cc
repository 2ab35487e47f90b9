// ZAB's leader election and the establishment of a leader before it serves (see zab.h).
//
// Election: when the members of a shard lose its leader (the failure detector suspects it, or its connection is
// down), a member in sync stands for leader in a newer view. A pre-vote first asks whether a majority of the shard's
// members lost the leader too (Raft's PreVote): one member cut off from a live leader deposes nobody. Then each
// member votes once per view (Membership::vote), for an in-sync candidate, only if it lost the leader itself; a vote
// fences the voter against proposals of older views. Candidates go in member order after the old leader, two
// failure timeouts apart, so usually one runs; a lost round is retried after a random delay in a higher view. No
// lease is waited out: the old leader's reads are its local copy, which sequential consistency lets lag, and its
// writes need a majority, which the voters refuse it.
//
// Establishment (ZAB's synchronization phase), before a leader writes, resolves or answers a copy in its view:
//  1. It tells every other data node its view (kNewView) and, from the members of its shard that run the view now
//     (each refuses proposals of older views from then on: it answers under ZabNode::view_gate), copies records
//     until it holds a majority's copies (its own included). Every write a leader committed reached a majority, so
//     one of them holds it: the new leader now holds every committed write (newer tags are installed marked, and
//     committed at the key's next write or read, as any marked copy).
//  2. Its tag floor F: above the highest timestamp it holds + 1 and above every floor an earlier leadership
//     recorded (the members answer kNewView with the highest they recorded), and recorded at a majority (kFloor)
//     before it is used. The first write of a key in a leadership takes a timestamp of at least its floor, the next
//     ones the previous + 1, each only once the previous committed: so a proposal no majority acknowledged (an
//     orphan, whose client heard "may or may not have taken effect"), which may sit at a member the next leader did
//     not copy from, has a timestamp of at most max(the key's last committed + 1, its leadership's floor), both
//     below every later floor. Every later write of the key is newer than the orphan, so no leader can gather an
//     orphan over a committed write (an orphan nothing followed may still be gathered and committed: its write takes
//     effect late, as it may). The floors survive restarts: a recovering member copies the highest (copy_extra).
// A restarted leader of view 0 establishes the same way; on a fresh shard, with nothing to gather, that is quick.
#include <spdlog/spdlog.h>

#include <random>

#include "replication/zab/zab.h"
#include "rpc/codec.h"

namespace rdx::replication::zab {

using cluster::ShardView;
using rpc::Task;

namespace {
// How long a voter's fence stays when the view it voted in is not installed here: far longer than a campaign.
constexpr auto kVoteFence = std::chrono::seconds(5);
constexpr auto kReadyPoll = std::chrono::milliseconds(5);
constexpr int kReadyPolls = 200;  // a write or resolve waits up to a second for its leader's establishment

size_t majority_of_shard(const cluster::Topology& t, uint32_t shard) {
  size_t n = 0;
  for (uint16_t id : t.shards[shard].members)
    if (t.nodes[id].role == cluster::Role::kData) ++n;
  return n / 2 + 1;
}
}  // namespace

uint64_t ZabWorker::next_ts(uint64_t base) const {
  const uint64_t floor = zab_.tag_floor();
  // A base this leadership wrote (only it writes tags of this node at or above its floor): the next timestamp.
  if (tag_node(base) == ctx_.self() && tag_ts(base) >= floor) return tag_ts(base) + 1;
  return std::max(tag_ts(base) + 1, floor);
}

Task<bool> ZabWorker::leader_ready(std::string_view key) {
  for (int i = 0; i < kReadyPolls; ++i) {
    if (!leads(key) || !ctx_.membership().in_sync()) co_return false;
    if (zab_.established(view_of(key))) co_return true;
    co_await ctx_.sched().sleep_for(kReadyPoll);
  }
  co_return false;
}

bool ZabWorker::serves_copies() const {
  const cluster::ShardView* own = own_view();
  return own == nullptr || own->primary != ctx_.self() || zab_.established(own->view);
}

Task<void> ZabWorker::elect(uint16_t deposed) {
  electing_ = true;
  const auto shard = static_cast<uint32_t>(ctx_.topology().nodes[ctx_.self()].shard);
  const auto timeout = std::chrono::milliseconds(ctx_.topology().failure.timeout_ms);
  cluster::Membership& m = ctx_.membership();
  std::mt19937 rng(std::random_device{}());
  for (int round = 0; !m.stopping(); ++round) {
    // This node's rank among the members after the old leader, in member order.
    const auto& members = ctx_.topology().shards[shard].members;
    const auto found = std::find(members.begin(), members.end(), deposed);
    const size_t at = found == members.end() ? members.size() - 1 : static_cast<size_t>(found - members.begin());
    size_t rank = 0;
    for (size_t i = 1; i <= members.size() && members[(at + i) % members.size()] != ctx_.self(); ++i) ++rank;
    const auto wait = round == 0 ? static_cast<int64_t>(rank) * 2 * timeout
                                 : std::chrono::milliseconds(std::uniform_int_distribution<int64_t>(
                                       timeout.count() / 2, timeout.count() * 3 / 2)(rng));
    co_await ctx_.sched().sleep_for(wait);
    if (own_leader() != deposed || !m.in_sync() || !cluster::lost_peer(ctx_, deposed))
      break;  // elected, or the leader is back
    const uint64_t view = std::max(m.view(shard).view, m.last_vote(shard).view) + 1;
    const bool won = co_await campaign(shard, view, deposed);
    if (won) break;
  }
  electing_ = false;
}

// One round: whether this node won.
Task<bool> ZabWorker::campaign(uint32_t shard, uint64_t view, uint16_t deposed) {
  const cluster::Topology& t = ctx_.topology();
  cluster::Membership& m = ctx_.membership();
  const auto timeout = std::chrono::milliseconds(2 * t.failure.timeout_ms + 1000);
  const auto ask = [&](bool pre) -> Task<size_t> {
    rpc::Writer w;
    w.put(shard).put(view).put(deposed).put(static_cast<uint8_t>(pre ? 1 : 0));
    std::vector<Task<rpc::Response>> calls;
    for (uint16_t n : t.shards[shard].members) {
      auto conn = n == deposed || n == ctx_.self() ? std::nullopt : ctx_.peer(n);
      if (conn) calls.push_back(ctx_.rpc().call_task(*conn, msgs_.at(kVote), w.data(), timeout));
    }
    const std::vector<rpc::Response> answers = co_await rpc::when_all(std::move(calls));
    co_return 1 + static_cast<size_t>(std::count_if(answers.begin(), answers.end(),
                                                    [](const rpc::Response& r) { return r.status == Code::kOk; }));
  };
  const size_t need = majority_of_shard(t, shard);
  const size_t would = co_await ask(true);
  if (would < need) {
    spdlog::warn("zab: only {} of the {} members of shard {} needed would replace {} as its leader", would, need, shard,
                 t.nodes[deposed].name);
    co_return false;
  }
  if (!m.vote(shard, view, ctx_.self())) co_return false;
  const auto lost_round = [&] {
    lift_fence(shard, view);
    return false;
  };
  spdlog::warn("zab: {} stands for leader of shard {} (view {}) in place of {}", t.nodes[ctx_.self()].name, shard, view,
               t.nodes[deposed].name);
  const size_t votes = co_await ask(false);
  if (votes < need) {
    spdlog::warn("zab: {} got {} of the {} votes it needs for view {} of shard {}", t.nodes[ctx_.self()].name, votes,
                 need, view, shard);
    co_return lost_round();
  }
  if (!m.in_sync() || !m.install_view(shard, ShardView{view, ctx_.self()})) co_return lost_round();
  m.note_promotion();
  on_membership_change();
  spdlog::warn("zab: {} is the leader of shard {} (view {}, {} votes)", t.nodes[ctx_.self()].name, shard, view, votes);
  if (!establishing_) co_await establish();
  co_return true;
}

void ZabWorker::serve_vote(const rpc::Incoming& in) {
  const cluster::Topology& t = ctx_.topology();
  rpc::Reader r(in.payload);
  const auto shard = r.get<uint32_t>();
  const auto view = r.get<uint64_t>();
  const auto deposed = r.get<uint16_t>();
  const auto pre = r.get<uint8_t>();
  const uint16_t candidate = in.peer_node;
  const int own = t.nodes[ctx_.self()].shard;
  if (!r.done() || pre > 1 || own < 0 || shard != static_cast<uint32_t>(own) || !from_member(in) ||
      deposed >= t.nodes.size() || candidate == deposed)
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  cluster::Membership& m = ctx_.membership();
  // Only to depose the leader this node follows and has lost itself, for a candidate it has not excluded, while its
  // own copy is complete (a recovering member's answers do not count); one vote per view.
  if (own_leader() != deposed || !cluster::lost_peer(ctx_, deposed) || !m.in_sync() || view <= m.view(shard).view ||
      m.member(candidate) == cluster::MemberState::kFailed)
    return ctx_.rpc().respond(in.reply_to(), Code::kAborted);
  if (pre != 0) return ctx_.rpc().respond(in.reply_to(), Code::kOk);
  if (!m.vote(shard, view, candidate)) return ctx_.rpc().respond(in.reply_to(), Code::kAborted);
  ctx_.rpc().respond(in.reply_to(), Code::kOk);
  // The fence protects the candidate's establishment, which runs only in members that learned its view (kNewView):
  // a view not installed here long after is one nobody establishes with this node, and the old leader's proposals
  // are taken again (a winner elsewhere is protected by the members that learned its view).
  rpc::spawn([](ZabWorker* self, uint32_t sh, uint64_t v) -> Task<void> {
    co_await cluster::linger(self->ctx_, kVoteFence);
    self->lift_fence(sh, v);
  }(this, shard, view));
}

void ZabWorker::lift_fence(uint32_t shard, uint64_t view) {
  cluster::Membership& m = ctx_.membership();
  if (m.view(shard).view >= view || m.vote_fence(shard) != view) return;
  m.lift_vote_fence(shard);
  spdlog::warn("zab: view {} of shard {} did not come; taking proposals of view {} again", view, shard,
               m.view(shard).view);
  zab_.request_catch_up();  // (it refused the leader's proposals meanwhile)
}

void ZabWorker::serve_new_view(const rpc::Incoming& in) {
  const cluster::Topology& t = ctx_.topology();
  rpc::Reader r(in.payload);
  const auto shard = r.get<uint32_t>();
  const ShardView v = ShardView::unpack(r.get<uint64_t>());
  // Only a data member announces a view it leads itself.
  if (!r.done() || shard >= t.shards.size() || v.primary != in.peer_node || v.primary >= t.nodes.size() ||
      t.nodes[v.primary].shard != static_cast<int>(shard) || !from_data_node(in))
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  // Exclusive: a proposal of an older view that passed its check here is stored before the answer (view_gate).
  std::unique_lock gate(zab_.view_gate());
  if (cluster::learn_view(ctx_, shard, v))
    spdlog::warn("zab: {} leads shard {} (view {})", t.nodes[v.primary].name, shard, v.view);
  const ShardView now = ctx_.membership().view(shard);
  if (now.view != v.view || now.primary != v.primary) return ctx_.rpc().respond(in.reply_to(), Code::kAborted);
  rpc::Writer w;
  w.put(zab_.floor_seen());
  ctx_.rpc().respond(in.reply_to(), Code::kOk, w.span());
}

void ZabWorker::serve_floor(const rpc::Incoming& in) {
  rpc::Reader r(in.payload);
  const auto shard = r.get<uint32_t>();
  const auto view = r.get<uint64_t>();
  const auto floor = r.get<uint64_t>();
  const int own = ctx_.topology().nodes[ctx_.self()].shard;
  if (!r.done() || own < 0 || shard != static_cast<uint32_t>(own) || !from_member(in) || floor > kTagMaxTs)
    return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  const ShardView now = ctx_.membership().view(shard);
  if (now.view != view || now.primary != in.peer_node) return ctx_.rpc().respond(in.reply_to(), Code::kAborted);
  zab_.see_floor(floor);
  ctx_.rpc().respond(in.reply_to(), Code::kOk);
}

void ZabWorker::serve_floor_seen(const rpc::Incoming& in) {
  if (!in.payload.empty() || !from_member(in)) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  rpc::Writer w;
  w.put(zab_.floor_seen());
  ctx_.rpc().respond(in.reply_to(), Code::kOk, w.span());
}

Task<bool> ZabWorker::copy_extra(uint16_t source) {
  auto conn = ctx_.peer(source);
  if (!conn) co_return false;
  const rpc::Response r = co_await ctx_.rpc().call_task(*conn, msgs_.at(kFloorSeen), {});
  rpc::Reader rd(r.payload);
  const auto floor = rd.get<uint64_t>();
  if (r.status != Code::kOk || !rd.done() || floor > kTagMaxTs) co_return false;
  zab_.see_floor(floor);
  co_return true;
}

Task<void> ZabWorker::establish() {
  const cluster::Topology& t = ctx_.topology();
  cluster::Membership& m = ctx_.membership();
  const auto shard = static_cast<uint32_t>(t.nodes[ctx_.self()].shard);
  const ShardView v = m.view(shard);
  if (v.primary != ctx_.self() || zab_.established(v.view) || !m.in_sync()) co_return;
  establishing_ = true;
  const bool done = co_await establish_view(shard, v);
  if (!done) co_await ctx_.sched().sleep_for(std::chrono::milliseconds(100));  // (tick_protocol tries again)
  establishing_ = false;
}

Task<bool> ZabWorker::establish_view(uint32_t shard, ShardView v) {
  const cluster::Topology& t = ctx_.topology();
  cluster::Membership& m = ctx_.membership();
  const auto still = [&] { return m.view(shard).packed() == v.packed() && m.in_sync(); };
  const auto failed = [&](std::string_view why) {
    spdlog::warn("zab: {} could not establish view {} of shard {}: {}", t.nodes[ctx_.self()].name, v.view, shard, why);
    return false;
  };
  // 1. The view, to every other data node (those of other shards learn where to forward; no need to wait for
  // them), and copies from the members of the shard that run it now (waiting only for those this node has not lost).
  rpc::Writer w;
  w.put(shard).put(v.packed());
  const auto timeout = std::chrono::milliseconds(t.failure.timeout_ms + 1000);
  std::vector<uint16_t> told;
  std::vector<Task<rpc::Response>> calls;
  for (uint16_t n : cluster::other_data_nodes(t, ctx_.self())) {
    auto conn = ctx_.peer(n);
    if (!conn) continue;
    if (t.nodes[n].shard == static_cast<int>(shard) && !cluster::lost_peer(ctx_, n)) {
      told.push_back(n);
      calls.push_back(ctx_.rpc().call_task(*conn, msgs_.at(kNewView), w.data(), timeout));
    } else {
      rpc::spawn(
          [](ZabWorker* self, transport::ConnId c, std::string body, std::chrono::milliseconds limit) -> Task<void> {
            (void)co_await self->ctx_.rpc().call_task(c, self->msgs_.at(kNewView), std::move(body), limit);
          }(this, *conn, w.data(), timeout));
    }
  }
  const std::vector<rpc::Response> answers = co_await rpc::when_all(std::move(calls));
  const size_t need = majority_of_shard(t, shard) - 1;
  uint64_t prior_floor = zab_.floor_seen();
  std::vector<uint16_t> running;  // the members that run the view
  for (size_t i = 0; i < told.size(); ++i) {
    rpc::Reader rd(answers[i].payload);
    const auto floor = rd.get<uint64_t>();
    if (answers[i].status != Code::kOk || !rd.done()) continue;
    prior_floor = std::max(prior_floor, floor);
    running.push_back(told[i]);
  }
  size_t copied = 0;
  for (size_t i = 0; i < running.size() && copied < need && still(); ++i) {
    const bool copy = co_await copy_from(running[i]);
    if (copy) ++copied;
  }
  if (copied < need || !still())
    co_return failed(fmt::format("copied from {} of the {} other members it needs", copied, need));
  // 2. The tag floor, recorded at a majority (this node included).
  uint64_t highest = 0;
  std::vector<store::ScanItem> items;
  uint64_t cursor = 0;
  do {
    items.clear();
    cursor = ctx_.table().scan(ctx_.session(), cursor, 256, &items);
    for (const store::ScanItem& it : items) highest = std::max(highest, tag_ts(it.version));
  } while (cursor != 0);
  const uint64_t floor = std::max(highest + 2, prior_floor + 1);
  if (floor > kTagMaxTs) co_return failed("the shard's tags are exhausted");
  rpc::Writer f;
  f.put(shard).put(v.view).put(floor);
  std::vector<Task<rpc::Response>> records;
  for (uint16_t n : running)
    if (auto conn = ctx_.peer(n)) records.push_back(ctx_.rpc().call_task(*conn, msgs_.at(kFloor), f.data(), timeout));
  const std::vector<rpc::Response> recorded = co_await rpc::when_all(std::move(records));
  const auto acks = static_cast<size_t>(
      std::count_if(recorded.begin(), recorded.end(), [](const rpc::Response& r) { return r.status == Code::kOk; }));
  if (acks < need || !still())
    co_return failed(fmt::format("{} of the {} other members it needs recorded its tag floor", acks, need));
  zab_.see_floor(floor);
  zab_.establish(v.view, floor);
  spdlog::warn("zab: {} established view {} of shard {} (the copies of {} members, tag floor {})",
               t.nodes[ctx_.self()].name, v.view, shard, copied + 1, floor);
  co_return true;
}

}  // namespace rdx::replication::zab
