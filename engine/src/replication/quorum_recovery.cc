// The quorum register's recovery of a member whose memory is new (a restart, or a member a membership epoch added),
// and the handlers it asks. Why it is safe:
//  - A write that completed was stored by a majority M of the members. Only members that restarted since lost it.
//  - This node's previous life may be in M, and an operation may still be waiting for the rest of its majority: it
//    could complete after this node copied, counting the previous life's answer. So the copy starts only after
//    kOpDeadline (and a margin) since this process started: every operation begun before that has finished or given
//    up by then, and none counts an answer it gathers after its deadline.
//  - Then it copies from every other member, each in sync (they hold every write they stored: their memory
//    survived, or they recovered themselves). n - majority + 1 of them would hold every completed write (M minus
//    this node has at least majority - 1 of the n - 1 others); all of them also hold every tag this node's previous
//    life wrote anywhere, so the timestamps it picks next (above what its queries see, its own copy included) never
//    repeat one of them with another value (a tag is (timestamp, node), and the node id survives the restart).
//    The price: a member that restarts waits until every other member is in sync. (A protocol whose members are
//    ordered may name fewer sources, QuorumWorker::copy_sources: craq copies from one neighbour in its chain, which
//    holds every write any member after it holds, craq.h.) Writes stored here meanwhile
//    stay: a copied record is applied only when its tag is newer. After each member's records comes whatever else
//    the protocol keeps (QuorumWorker::copy_extra; Paxos: its acceptors' state).
//  - A fresh shard: every member answered within one short round (kStatusTimeout) and none was ever in sync:
//    everyone starts empty. The node that finds it tells the others (kFresh, naming the incarnation each reported:
//    a member that restarted since, or went in sync since, refuses) and goes in sync only if every one accepted.
#include <spdlog/spdlog.h>

#include "replication/quorum_register.h"
#include "rpc/codec.h"

namespace rdx::replication {

using rpc::Task;
using Clock = std::chrono::steady_clock;

namespace {
constexpr auto kDeadlineMargin = std::chrono::milliseconds(100);
constexpr auto kRetry = std::chrono::milliseconds(100);
constexpr auto kStatusTimeout = std::chrono::milliseconds(300);
}  // namespace

// Runs for the node's life on worker 0: recovers whenever the node is not in sync (its start, or an epoch that
// made it rejoin, server/node.cc).
Task<void> QuorumWorker::recover() {
  while (!ctx_.membership().stopping()) {
    if (ctx_.membership().in_sync()) {
      co_await ctx_.sched().sleep_for(kRetry);
      continue;
    }
    const bool recovered = co_await recover_once();
    if (!recovered) co_await ctx_.sched().sleep_for(kRetry);
  }
}

Task<bool> QuorumWorker::recover_once() {
  const auto copy_at = node_.started() + kOpDeadline + kDeadlineMargin;
  if (Clock::now() < copy_at) {
    node_.set_recovery_state("waiting out the deadline of operations that may count this node's previous life");
    co_await ctx_.sched().sleep_for(copy_at - Clock::now());
  }
  const cluster::Topology& t = ctx_.topology();
  const int shard = t.nodes[ctx_.self()].shard;
  std::vector<uint16_t> others;
  for (uint16_t id : t.shards[static_cast<uint32_t>(shard)].members)
    if (t.nodes[id].role == cluster::Role::kData && id != ctx_.self()) others.push_back(id);
  // Every other member's status, asked at once: a fresh start is decided only on answers of one short round.
  const auto round = Clock::now();
  std::vector<Task<rpc::Response>> asks;
  std::vector<uint16_t> asked;
  for (uint16_t id : others)
    if (auto conn = ctx_.peer(id)) {
      asks.push_back(ctx_.rpc().call_task(*conn, msgs_.at(kRegStatus), {}, kStatusTimeout));
      asked.push_back(id);
    }
  std::vector<rpc::Response> answers = co_await rpc::when_all(std::move(asks));
  struct Seen {
    uint16_t node;
    bool in_sync, ever;
    uint64_t incarnation;
  };
  std::vector<Seen> seen;
  for (size_t i = 0; i < answers.size(); ++i) {
    rpc::Reader rd(answers[i].payload);
    const auto in_sync = rd.get<uint8_t>(), ever = rd.get<uint8_t>();
    const auto inc = rd.get<uint64_t>();
    if (answers[i].status == Code::kOk && rd.done()) seen.push_back({asked[i], in_sync != 0, ever != 0, inc});
  }
  size_t in_sync = 0;
  bool any_ever = false;
  for (const Seen& s : seen) {
    in_sync += s.in_sync ? 1 : 0;
    any_ever = any_ever || s.ever;
  }
  if (!others.empty() && in_sync == others.size()) {
    for (uint16_t src : copy_sources(others)) {
      node_.set_recovery_state(fmt::format("copying shard {} from {}", shard, t.nodes[src].name));
      const bool copied = co_await copy_from(src);
      if (!copied) co_return false;
      const bool extra = co_await copy_extra(src);
      if (!extra) co_return false;
    }
  } else if (seen.size() == others.size() && !any_ever) {
    if (Clock::now() - round > kStatusTimeout) co_return false;  // answers too old to decide on: ask again
    spdlog::info("{}: shard {} is new (every member answered, none was ever in sync): starting empty", protocol(),
                 shard);
    std::vector<Task<rpc::Response>> fresh;
    for (const Seen& s : seen) {
      auto conn = ctx_.peer(s.node);
      if (!conn) co_return false;
      rpc::Writer w;
      w.put(s.incarnation);
      fresh.push_back(ctx_.rpc().call_task(*conn, msgs_.at(kRegFresh), w.data(), kStatusTimeout));
    }
    std::vector<rpc::Response> accepted = co_await rpc::when_all(std::move(fresh));
    for (const rpc::Response& r : accepted)
      if (r.status != Code::kOk) co_return false;  // a member is not what it was: decide again
  } else {
    node_.set_recovery_state(fmt::format(
        "waiting for every other member of shard {} to be in sync, to copy from ({} of {} answered, {} in sync)", shard,
        seen.size(), others.size(), in_sync));
    co_return false;
  }
  node_.ever_in_sync().store(true, std::memory_order_release);
  ctx_.membership().set_in_sync(true);
  node_.set_recovery_state("in sync");
  spdlog::info("{}: {} is in sync", protocol(), t.nodes[ctx_.self()].name);
  co_return true;
}

Task<bool> QuorumWorker::copy_from(uint16_t source) {
  const uint64_t session = (uint64_t{node_.incarnation()} << 16) ^ ++copies_started_;
  for (uint8_t done = 0; done == 0;) {
    auto conn = ctx_.peer(source);
    if (!conn) co_return false;
    rpc::Writer w;
    w.put(session);
    rpc::Response r = co_await ctx_.rpc().call_task(*conn, msgs_.at(kRegScan), w.data());
    if (r.status != Code::kOk) co_return false;
    rpc::Reader rd(r.payload);
    done = rd.get<uint8_t>();
    const auto count = rd.get<uint32_t>();
    bool valid = true;
    for (uint32_t i = 0; i < count && rd.ok() && valid; ++i) {
      const std::string key(rd.bytes(cluster::kMaxKeyBytes));
      const auto tag = rd.get<uint64_t>();
      const std::string value(rd.bytes(store::kMaxValueBytes));
      valid = !rd.ok() || (tag != 0 && tag <= store::kMaxVersion && valid_blob(tag, value));
      if (rd.ok() && valid && install(key, tag, value) == Code::kResourceExhausted) co_return false;
    }
    if (!valid || !rd.done() || done > 1) {
      spdlog::warn("{}: a malformed copy page from {}", protocol(), ctx_.topology().nodes[source].name);
      co_return false;
    }
  }
  co_return true;
}

void QuorumWorker::serve_status(const rpc::Incoming& in) {
  if (!in.payload.empty() || !from_member(in)) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  rpc::Writer w;
  w.put(static_cast<uint8_t>(ctx_.membership().in_sync() ? 1 : 0))
      .put(static_cast<uint8_t>(node_.ever_in_sync().load(std::memory_order_acquire) ? 1 : 0))
      .put(node_.incarnation());
  ctx_.rpc().respond(in.reply_to(), Code::kOk, w.span());
}

void QuorumWorker::serve_scan(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const auto session = rd.get<uint64_t>();
  if (!rd.done() || !from_member(in)) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  if (!ctx_.membership().in_sync() || !serves_copies()) return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
  TablePager& pager = copies_.at(in.peer_node, session);
  rpc::Writer items;
  uint32_t count = 0;
  while (store::ScanItem* it = pager.next(ctx_.table(), ctx_.session())) {
    if (!TablePager::fits(items.data().size(), count, it->key.size() + it->value.size() + 16)) break;
    items.bytes(it->key).put(it->version).bytes(it->value);
    ++count;
    pager.pop();
  }
  const bool done = pager.done();
  if (done) copies_.erase(in.peer_node, session);
  rpc::Writer out;
  out.put(static_cast<uint8_t>(done ? 1 : 0)).put(count);
  const std::string body = out.data() + items.data();
  ctx_.rpc().respond(in.reply_to(), Code::kOk, rpc::as_bytes_of(body));
}

void QuorumWorker::serve_fresh(const rpc::Incoming& in) {
  rpc::Reader rd(in.payload);
  const auto inc = rd.get<uint64_t>();
  if (!rd.done() || !from_member(in)) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  if (inc != node_.incarnation() || node_.ever_in_sync().load(std::memory_order_acquire))
    return ctx_.rpc().respond(in.reply_to(), Code::kAborted);
  node_.ever_in_sync().store(true, std::memory_order_release);
  ctx_.membership().set_in_sync(true);
  node_.set_recovery_state("in sync");
  spdlog::info("{}: {} is in sync (a new shard, as {} found)", protocol(), ctx_.topology().nodes[ctx_.self()].name,
               in.peer_node < ctx_.topology().nodes.size() ? ctx_.topology().nodes[in.peer_node].name : "?");
  ctx_.rpc().respond(in.reply_to(), Code::kOk);
}

}  // namespace rdx::replication
