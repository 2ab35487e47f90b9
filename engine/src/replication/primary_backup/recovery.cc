#include "replication/primary_backup/recovery.h"

#include <spdlog/spdlog.h>

#include <random>

#include "cluster/failure_detector.h"
#include "cluster/kv_api.h"
#include "cluster/lockword.h"
#include "replication/primary_backup/messages.h"
#include "rpc/codec.h"

namespace rdx::replication::primary_backup {

using cluster::MemberState;
using cluster::Topology;
using rpc::Task;
using namespace std::chrono_literals;

namespace {
constexpr auto kPollEvery = 200ms;
constexpr auto kCheckEvery = 1s;
constexpr auto kNoticeEvery = 20ms;
constexpr auto kScanSessionIdle = 60s;
constexpr int kJoinAttempts = 15;  // x 200 ms: nodes that stay unreachable this long are presumed dead
}  // namespace

Status Recovery::start() {
  auto& rpc = ctx_.rpc();
  // kSyncStatus, kJoin and kJoinDone carry nothing: anything else is a malformed message and changes nothing.
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kSyncStatus), [this](const rpc::Incoming& in) {
    if (!in.payload.empty()) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
    rpc::Writer w;
    w.put(static_cast<uint8_t>(ctx_.membership().in_sync() ? 1 : state_.holds_copy() ? 2 : 0));
    w.put(static_cast<uint8_t>(in.peer_node < ctx_.topology().nodes.size() ? ctx_.membership().member(in.peer_node)
                                                                           : MemberState::kInSync));
    w.put(ctx_.membership().view(own_shard()).packed());
    ctx_.rpc().respond(in.reply_to(), Code::kOk, w.span());
  }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kJoin), [this](const rpc::Incoming& in) {
    if (in.peer_node == ctx_.self() || !in.payload.empty())
      return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
    // A node this one's epoch does not have yet (a scale-out this node or one of its workers has not applied): it
    // asks again.
    if (in.peer_node >= ctx_.topology().nodes.size() ||
        ctx_.topology().nodes[in.peer_node].role != cluster::Role::kData ||
        !ctx_.membership().every_worker_runs(ctx_.topology().epoch))
      return ctx_.rpc().respond(in.reply_to(), Code::kNotFound);
    ctx_.membership().set_member(in.peer_node, MemberState::kJoining);
    spdlog::info("recovery: {} joins; including it in new writes", ctx_.topology().nodes[in.peer_node].name);
    rpc::spawn(wait_drained(in.reply_to(), ctx_.membership().generation()));
  }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kJoinDone), [this](const rpc::Incoming& in) {
    if (in.peer_node >= ctx_.topology().nodes.size() || in.peer_node == ctx_.self() || !in.payload.empty()) return;
    // Only a join in progress completes: if the node was excluded meanwhile it missed writes and joins again.
    if (ctx_.membership().member(in.peer_node) != MemberState::kJoining) return;
    ctx_.membership().set_member(in.peer_node, MemberState::kInSync);
    spdlog::info("recovery: {} is in sync", ctx_.topology().nodes[in.peer_node].name);
  }));
  RDX_RETURN_IF_ERROR(rpc.on(msgs_.at(kSyncUndecided), [this](const rpc::Incoming& in) { serve_undecided(in); }));
  return rpc.on(msgs_.at(kSyncScan), [this](const rpc::Incoming& in) { serve_scan(in); });
}

void Recovery::tick() { scans_.expire(kScanSessionIdle); }

Task<void> Recovery::wait_drained(rpc::ReplyTo to, uint64_t gen) {
  while (!ctx_.membership().writes_drained(gen)) co_await ctx_.sched().sleep_for(1ms);
  ctx_.rpc().respond(to, Code::kOk);
}

Task<std::optional<Recovery::PeerStatus>> Recovery::status_of(uint16_t node) {
  auto conn = ctx_.peer(node);
  if (!conn) co_return std::nullopt;
  rpc::Response r = co_await ctx_.rpc().call(*conn, msgs_.at(kSyncStatus), {});
  if (r.status != Code::kOk) co_return std::nullopt;
  rpc::Reader rd(r.payload);
  const auto sync = rd.get<uint8_t>();
  const auto view_of_me = rd.get<uint8_t>();
  const cluster::ShardView view = cluster::ShardView::unpack(rd.get<uint64_t>());
  const Topology& t = ctx_.topology();
  // (The view's primary may be one a newer epoch removed: the view is still what the member knows.)
  if (!rd.done() || sync > 2 || view_of_me > 2 || view.primary >= t.nodes.size() ||
      (t.nodes[view.primary].shard != static_cast<int>(own_shard()) &&
       t.nodes[view.primary].role != cluster::Role::kRemoved))
    co_return std::nullopt;
  co_return PeerStatus{sync == 1, sync == 2, static_cast<MemberState>(view_of_me), view};
}

Task<void> Recovery::run() {
  for (;;) {
    // A node that resigned to hand its shard over is about to stop: it does not join its successor (who would have
    // to exclude it again, waiting out a lease).
    if (ctx_.membership().stopping() || ctx_.membership().resigning()) co_return;
    if (!ctx_.membership().in_sync()) {
      co_await recover();
      continue;
    }
    // A heartbeat answered "excluded" (cluster/failure_detector.h) says so at once; asking every node once a second
    // covers a cluster without failure detection.
    bool excluded = false;
    for (auto waited = 0ms; waited < kCheckEvery && !excluded; waited += kNoticeEvery) {
      co_await ctx_.sched().sleep_for(kNoticeEvery);
      excluded = ctx_.membership().take_excluded_notice();
    }
    if (excluded)
      spdlog::warn(
          "recovery: a member excluded this node (its answer to a heartbeat; it may have missed writes): "
          "copying the shard again");
    // (co_await never sits in a condition: GCC 12 miscompiles such coroutines; engine/tools/lint.sh checks.)
    if (!excluded) excluded = co_await excluded_somewhere();
    if (excluded) {
      state_.set_holds_copy(true);
      ctx_.membership().set_in_sync(false);
      state_.set_status("recovering: excluded by a member (it may have missed writes)");
    }
  }
}

Task<bool> Recovery::excluded_somewhere() {
  std::vector<uint16_t> nodes = cluster::other_data_nodes(ctx_.topology(), ctx_.self());
  std::vector<Task<std::optional<PeerStatus>>> asks;
  for (uint16_t n : nodes) asks.push_back(status_of(n));
  auto answers = co_await rpc::when_all(std::move(asks));
  for (size_t i = 0; i < nodes.size(); ++i)
    if (answers[i] && answers[i]->view_of_me == MemberState::kFailed) {
      spdlog::warn("recovery: {} excluded this node (it may have missed writes): copying the shard again",
                   ctx_.topology().nodes[nodes[i]].name);
      co_return true;
    }
  co_return false;
}

// A snapshot record that lands in the placeholder of a held write (the hold reached this joining node before the
// copy did) keeps the placeholder's lock word, absent: the record is a committed value, so it is present. Without
// this, the held write's abort removed the key (and left a tombstone that kept later copies from restoring it), and
// this node, elected later, had lost a committed row. Only a placeholder's word (absent, no tag, not hidden) at the
// snapshot's version changes: a newer replicated write sets its tag before its value (apply_hidden).
void Recovery::show_in_placeholder(std::string_view key, uint64_t version) {
  using namespace cluster::lockword;
  for (;;) {
    store::RecordRef ref = ctx_.table().find(ctx_.session(), key);
    if (!ref.valid()) return;
    uint64_t word = ref.lock_word().load(std::memory_order_acquire);
    if (retired(word)) continue;
    if (!absent(word) || (word & (kOwnerMask | kNotReadable)) != 0 || ref.version() != version) return;
    if (ref.lock_word().compare_exchange_strong(word, word & ~kAbsent, std::memory_order_acq_rel)) return;
  }
}

void Recovery::clear_local() {
  std::vector<store::ScanItem> items;
  uint64_t cursor = 0;
  do {
    items.clear();
    cursor = ctx_.table().scan(ctx_.session(), cursor, 256, &items);
    for (const auto& it : items) ctx_.table().remove(ctx_.session(), it.key);
  } while (cursor != 0);
  undecided_.clear();
}

Task<void> Recovery::recover() {
  // A node that left sync because it learned a new view of its shard (Membership::learn_view) drops its copy once
  // a source is there, like one that was excluded.
  if (ctx_.membership().take_excluded_notice()) state_.set_holds_copy(true);
  undecided_.heard().incomplete();
  state_.set_status(fmt::format("recovering: asking the members of shard {} whether they are in sync", own_shard()));
  // Whether every other member of the shard included this node in its new writes (answered the join): only then
  // does this node hear every write of its shard from now on (a member presumed down may still be the primary
  // and send it none until it learns of the join).
  bool whole_shard_included = true;
  for (;;) {
    if (ctx_.membership().stopping() || ctx_.membership().resigning()) co_return;
    // (Each round: a membership epoch may add or remove members meanwhile.)
    const Topology& t = ctx_.topology();
    const auto& members = t.shards[own_shard()].members;
    std::vector<uint16_t> others;
    std::vector<Task<std::optional<PeerStatus>>> asks;
    for (uint16_t m : members)
      if (m != ctx_.self()) {
        others.push_back(m);
        asks.push_back(status_of(m));
      }
    auto answers = co_await rpc::when_all(std::move(asks));
    // The newest view any member knows (a restarted node learns the failovers it missed here), then a source in
    // it: its primary if that is in sync, else any member in sync in that view (a member still in an older view
    // may hold writes the new primary never had).
    for (const auto& a : answers)
      if (a) (void)ctx_.membership().install_view(own_shard(), a->view);
    const cluster::ShardView view = ctx_.membership().view(own_shard());
    size_t reachable = 0;
    bool copy_elsewhere = false;
    std::optional<uint16_t> source;
    for (size_t i = 0; i < others.size(); ++i) {
      if (!answers[i]) continue;
      ++reachable;
      copy_elsewhere |= answers[i]->holds_copy;
      if (answers[i]->in_sync && answers[i]->view == view && (!source || others[i] == view.primary)) source = others[i];
    }
    const bool majority = (reachable + 1) * 2 > members.size();
    const bool all_answered = reachable == others.size();
    if (source) {
      // Only now, with a complete copy to replace it, may a copy this node kept go (it may have missed writes).
      if (state_.holds_copy() || state_.take_dirty()) {
        clear_local();
        state_.set_holds_copy(false);
      }
      state_.set_joining(true);
      bool copied = false;
      const Joined joined = co_await announce_join();
      if (!joined.stopping) copied = co_await copy_from(*source);
      whole_shard_included = joined.whole_shard;
      if (copied && !state_.take_dirty()) break;
      if (copied) {  // a write that did not commit landed meanwhile: from an empty table again
        state_.set_holds_copy(true);
        continue;
      }
      spdlog::warn("recovery: copy from {} did not complete; retrying", t.nodes[*source].name);
    } else if (majority && state_.holds_copy() &&
               (view.primary == ctx_.self() || state_.synced_view() == view.packed())) {
      // No member is in sync: this node's copy is the best there is, if it is the primary of the newest view (it
      // was in sync when elected) or its copy is from that view. Rejoin with it, so the members that excluded this
      // node include it again. A copy from an older view (a deposed primary's) may lack the newer primaries'
      // writes: its holder waits for one of them.
      spdlog::warn("recovery: no member of shard {} is in sync ({} of {} answered): resuming with this node's copy",
                   t.nodes[ctx_.self()].shard, reachable + 1, members.size());
      state_.set_joining(true);
      whole_shard_included = (co_await announce_join()).whole_shard;
      break;
    } else if (all_answered && !copy_elsewhere) {
      // Only when every member answered: one that did not may hold the only copy (seen in a rolling update: the
      // restarted primary reached one backup, itself between copies, and not yet the one that held the data).
      spdlog::info("recovery: no member of shard {} holds data (all {} answered): starting empty",
                   t.nodes[ctx_.self()].shard, members.size());
      break;
    } else if (!copy_elsewhere) {
      state_.set_status(
          fmt::format("recovering: no member that answered holds data; waiting for all {} members of "
                      "shard {} to answer ({} did)",
                      members.size(), t.nodes[ctx_.self()].shard, reachable + 1));
    } else {
      state_.set_status(
          fmt::format("recovering: no member of shard {} is in sync; waiting for a member with a copy from view {}",
                      t.nodes[ctx_.self()].shard, view.view));
    }
    co_await ctx_.sched().sleep_for(kPollEvery);
  }
  state_.set_holds_copy(false);
  ctx_.membership().lift_vote_fence(own_shard());
  state_.set_synced_view(ctx_.membership().view(own_shard()).packed());  // (read first: a newer one leaves sync)
  // It hears every write of its shard from now on if the whole shard included it in new writes (before this).
  if (whole_shard_included) undecided_.heard().complete_from(std::chrono::steady_clock::now());
  ctx_.membership().set_in_sync(true);
  state_.set_joining(false);
  for (uint16_t n : cluster::other_data_nodes(ctx_.topology(), ctx_.self()))
    if (auto conn = ctx_.peer(n)) (void)ctx_.rpc().send_oneway(*conn, msgs_.at(kJoinDone), {});
  state_.set_status("in sync");
  spdlog::info("recovery: {} is in sync and serving", ctx_.topology().nodes[ctx_.self()].name);
}

// On return every member that answered includes this node again; what they said before ("excluded", to a heartbeat
// sent before the join) is stale.
Task<Recovery::Joined> Recovery::announce_join() {
  std::vector<uint16_t> pending = cluster::other_data_nodes(ctx_.topology(), ctx_.self());
  for (int attempt = 0; attempt < kJoinAttempts && !pending.empty(); ++attempt) {
    // Nodes an epoch applied meanwhile removed are not waited for.
    std::erase_if(pending, [&](uint16_t n) { return ctx_.topology().nodes[n].role != cluster::Role::kData; });
    std::vector<uint16_t> asked;
    std::vector<Task<rpc::Response>> calls;
    for (uint16_t n : pending) {
      auto conn = ctx_.peer(n);
      if (!conn) continue;
      asked.push_back(n);
      calls.push_back(ctx_.rpc().call_task(*conn, msgs_.at(kJoin), {}));
    }
    auto res = co_await rpc::when_all(std::move(calls));
    bool behind = false;  // a member answered from an epoch without this node: it will learn it, wait for it
    for (size_t i = 0; i < res.size(); ++i) {
      if (res[i].status == Code::kOk) std::erase(pending, asked[i]);
      behind |= res[i].status == Code::kNotFound;
    }
    if (behind) {
      state_.set_status("joining: waiting for members to apply the epoch that adds this node");
      attempt = -1;  // (rounds spent waiting for it do not count toward presuming anybody down)
      if (ctx_.membership().stopping()) co_return Joined{.stopping = true};
    }
    if (!pending.empty()) co_await ctx_.sched().sleep_for(kPollEvery);
  }
  (void)ctx_.membership().take_excluded_notice();
  const Topology& t = ctx_.topology();
  Joined joined{.whole_shard = true};
  for (uint16_t n : pending) {
    if (t.nodes[n].role != cluster::Role::kData) continue;  // removed by an epoch applied meanwhile
    spdlog::warn("recovery: {} did not answer the join; presumed down", t.nodes[n].name);
    if (t.nodes[n].shard == t.nodes[ctx_.self()].shard) joined.whole_shard = false;
    // A backup that is down misses writes: exclude it until it joins itself (a primary is deposed by an election).
    if (ctx_.membership().primary(static_cast<uint32_t>(t.nodes[n].shard)) != n) {
      (void)co_await cluster::exclude_after_lease(ctx_, n);
    }
  }
  co_return joined;
}

Task<bool> Recovery::copy_from(uint16_t source) {
  const std::string& name = ctx_.topology().nodes[source].name;
  uint64_t session = std::random_device{}() | (uint64_t{std::random_device{}()} << 32);
  size_t copied = 0, skipped = 0;
  spdlog::info("recovery: copying shard {} from {}", ctx_.topology().nodes[ctx_.self()].shard, name);
  state_.set_status(
      fmt::format("recovering: copying shard {} from {}", ctx_.topology().nodes[ctx_.self()].shard, name));
  for (;;) {
    auto conn = ctx_.peer(source);
    if (!conn) co_return false;
    rpc::Response r = co_await ctx_.rpc().call(*conn, msgs_.at(kSyncScan), rpc::as_bytes_of(session));
    if (r.status != Code::kOk) co_return false;
    rpc::Reader rd(r.payload);
    auto done = rd.get<uint8_t>();
    auto count = rd.get<uint32_t>();
    // Versions of keys the source deleted: this copy must never issue them again (a WATCH or a transaction may
    // hold one, and would take a re-created key for the one it read).
    ctx_.table().raise_removed_version_max(rd.get<uint64_t>());
    bool bad_flags = false;
    for (uint32_t i = 0; i < count && rd.ok(); ++i) {
      std::string_view key = rd.bytes(cluster::kMaxKeyBytes);
      std::string_view value = rd.bytes(store::kMaxValueBytes);
      auto version = rd.get<uint64_t>();
      auto flags = rd.get<uint64_t>();
      if (!rd.ok()) break;
      if (flags != 0 && flags != cluster::lockword::kNotReadable) {
        bad_flags = true;
        break;
      }
      // A hidden record carries its version's tag, as apply_hidden leaves it (cluster/lockword.h).
      if (flags != 0) flags |= cluster::lockword::owner_bits(version);
      bool applied = state_.apply_snapshot(key, version, [&] {
        if (ctx_.table().put(ctx_.session(), key, value, version, nullptr, flags) == store::OpStatus::kOk)
          show_in_placeholder(key, version);
      });
      applied ? ++copied : ++skipped;
    }
    if (!rd.done() || bad_flags) {
      spdlog::error("recovery: malformed snapshot page from {}", name);
      co_return false;
    }
    if (done != 0) break;
  }
  spdlog::info("recovery: copied {} records from {} ({} superseded by newer deletes)", copied, name, skipped);
  co_return co_await copy_undecided(source);
}

// A write decided meanwhile may be noted here after its notice: an election locks only a write its record still
// holds hidden (PbWorker::lock_undecided), so such a stale note does nothing.
Task<bool> Recovery::copy_undecided(uint16_t source) {
  auto conn = ctx_.peer(source);
  if (!conn) co_return false;
  rpc::Response r = co_await ctx_.rpc().call(*conn, msgs_.at(kSyncUndecided), {});
  if (r.status != Code::kOk) co_return false;  // (the source left sync, or its connection broke: copy again)
  auto ws = decode_undecided(rpc::as_bytes_of(r.payload));
  if (!ws) {
    spdlog::error("recovery: malformed undecided writes from {}", ctx_.topology().nodes[source].name);
    co_return false;
  }
  for (cluster::InheritedWrite& w : *ws) undecided_.note(std::move(w));
  co_return true;
}

void Recovery::serve_undecided(const rpc::Incoming& in) {
  if (!in.payload.empty()) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  if (!ctx_.membership().in_sync()) return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
  const std::string out = encode_undecided(undecided_.copy());
  ctx_.rpc().respond(in.reply_to(), Code::kOk, rpc::as_bytes_of(out));
}

void Recovery::serve_scan(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  auto id = rd.get<uint64_t>();
  if (!rd.done()) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  if (!ctx_.membership().in_sync()) return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
  ScanSession& s = scans_.at(in.peer_node, id);
  rpc::Writer items;
  uint32_t count = 0;
  while (store::ScanItem* it = s.pager.next(ctx_.table(), ctx_.session())) {
    if (cluster::lockword::absent(it->lock_word)) {        // placeholders and pending deletes: logically absent
      s.absent_max = std::max(s.absent_max, it->version);  // a pending delete's version is a removed one
      s.pager.pop();
      continue;
    }
    if (!TablePager::fits(items.data().size(), count, it->key.size() + it->value.size() + 32)) break;
    // A value written by a writer not yet known committed stays hidden from single-key reads at the copy too.
    uint64_t flags = cluster::lockword::readable(it->lock_word) ? 0 : cluster::lockword::kNotReadable;
    items.bytes(it->key).bytes(it->value).put(it->version).put(flags);
    ++count;
    s.pager.pop();
  }
  bool done = s.pager.done();
  const uint64_t removed_max = std::max(ctx_.table().removed_version_max(), s.absent_max);
  if (done) scans_.erase(in.peer_node, id);
  rpc::Writer out;
  out.put(static_cast<uint8_t>(done ? 1 : 0)).put(count).put(removed_max);
  std::string body = out.data() + items.data();
  ctx_.rpc().respond(in.reply_to(), Code::kOk, rpc::as_bytes_of(body));
}

}  // namespace rdx::replication::primary_backup
