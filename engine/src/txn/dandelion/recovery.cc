// Coordinator recovery: what the participants of a transaction do when its coordinator is lost while they hold its
// locks (dandelion.h). Each such participant asks every participant (itself included) what it knows; the question
// fences the transaction there (the coordinator's later apply and unlock are refused), so the answers no longer
// change through the coordinator, and every participant that asks decides the same:
//   commit  if a participant committed it (its coordinator's unlock came before the fence), or the protocol's
//           report point was reached: dnl2, a participant applied (the coordinator had decided and
//           replicated); dnl1, every participant locked all it was asked (the coordinator may have reported then)
//   abort   otherwise: the coordinator cannot have reported a commit (dnl4 reports after every unlock)
// A participant whose primary was replaced is asked at its successor, which answers for it (decide()).
// Then each applies the decision to its own keys through the replica log, as their primary, still holding the
// locks: a commit writes the logged values with the versions the coordinator would have given them (the lock's
// version + 1); an abort writes the current value again at the version after the aborted write's (the lock's + 2), so
// that a copy of the aborted write a backup may hold hidden (replicated before the coordinator died) is overwritten and
// never shown by a failover.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

#include "cluster/lockword.h"
#include "cluster/record_locks.h"
#include "txn/dandelion/dandelion.h"

namespace rdx::txn::dandelion {

using cluster::LogMode;
using cluster::LogWrite;
using rpc::Task;

namespace {
constexpr auto kScan = std::chrono::milliseconds(20);
// Locks held this long are recovered even while their coordinator looks alive (its unlock may have been lost with a
// connection that broke and came back); a live coordinator loses nothing by it: its later messages are refused and
// its client hears "may or may not have taken effect".
constexpr auto kStuck = std::chrono::seconds(2);
constexpr auto kRetry = std::chrono::milliseconds(50);
constexpr auto kAskTimeout = std::chrono::milliseconds(1000);
constexpr auto kExpireEvery = std::chrono::seconds(1);

const char* state_name(TxnState s) {
  switch (s) {
    case TxnState::kUnknown:
      return "unknown";
    case TxnState::kLocked:
      return "locked";
    case TxnState::kPartial:
      return "partly locked";
    case TxnState::kApplied:
      return "applied";
    case TxnState::kCommitted:
      return "committed";
    case TxnState::kAborted:
      return "aborted";
    case TxnState::kHidden:
      return "inherited hidden";
    case TxnState::kUntouched:
      return "nothing replicated here";
  }
  return "?";
}
}  // namespace

Task<void> Dandelion::recovery_loop() {
  auto next_expire = Participant::Clock::now() + kExpireEvery;
  while (!env_.ctx.membership().stopping()) {
    co_await env_.ctx.sched().sleep_for(kScan);
    const auto now = Participant::Clock::now();
    if (now >= next_expire) {
      participant_.expire(now);
      forget_retained(now);
      next_expire = now + kExpireEvery;
    }
    adopt_inherited();
    std::vector<uint64_t> due;
    for (auto& [txid, p] : participant_.pending())
      if (!p.recovering && (p.fenced || coordinator_lost(txid, p, now))) {
        p.recovering = true;
        due.push_back(txid);
      }
    for (uint64_t txid : due) rpc::spawn(recover(txid));
  }
}

void Dandelion::adopt_inherited() {
  for (const cluster::InheritedWrite& w : env_.log.take_inherited()) participant_.inherit(w);
}

// Lost: this worker's connection to it is down, or the failure detector suspects or excluded it (a kill, a pause,
// a partition), or it has held these locks for too long. A coordinator on this node is never lost.
bool Dandelion::coordinator_lost(uint64_t txid, const Pending& p, Participant::Clock::time_point now) {
  const uint16_t c = cluster::writer_node(txid);
  cluster::WorkerContext& ctx = env_.ctx;
  if (c == ctx.self() || c >= ctx.topology().nodes.size()) return false;
  if (now - p.since > kStuck) return true;
  if (now - p.since < kScan) return false;  // (a coordinator that just connected: our own connection may lag)
  return !ctx.peer(c) || ctx.membership().suspected(c) || ctx.membership().member(c) == cluster::MemberState::kFailed;
}

Answer Dandelion::answer(uint64_t txid) {
  adopt_inherited();
  Answer a{participant_.query(txid), {}};
  if (a.state != TxnState::kUnknown) return a;
  const cluster::TxnHeard heard = env_.log.heard(txid);
  if (heard.kind == cluster::TxnHeard::Kind::kShown) a.state = TxnState::kCommitted;  // (its coordinator's notice)
  if (heard.kind == cluster::TxnHeard::Kind::kNothing) a = {TxnState::kUntouched, heard.complete_for};
  return a;
}

Task<std::optional<Answer>> Dandelion::ask(uint16_t node, uint64_t txid) {
  cluster::WorkerContext& ctx = env_.ctx;
  if (node == ctx.self()) {
    if (!cluster::serves_as_primary(ctx, std::chrono::steady_clock::now())) co_return std::nullopt;
    co_return answer(txid);
  }
  auto conn = ctx.peer(node);
  if (!conn) co_return std::nullopt;
  rpc::Writer w;
  w.put(txid);
  rpc::Response r = co_await ctx.rpc().call_task(*conn, env_.msgs.at(kQuery), w.data(), kAskTimeout);
  if (r.status != Code::kOk) co_return std::nullopt;
  rpc::Reader rd(r.payload);
  const auto s = rd.get<uint8_t>();
  if (s > static_cast<uint8_t>(TxnState::kUntouched)) co_return std::nullopt;
  Answer a{static_cast<TxnState>(s), {}};
  if (a.state == TxnState::kUntouched) a.complete_for = std::chrono::milliseconds(rd.get<uint32_t>());
  if (!rd.done()) co_return std::nullopt;
  co_return a;
}

// Only as the primary of its shard: a deposed one's locks protect nothing, and its successor never had them.
void Dandelion::serve_query(const rpc::Incoming& in) {
  rpc::Reader r(in.payload);
  const auto txid = r.get<uint64_t>();
  if (!r.done()) return env_.ctx.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  if (!cluster::serves_as_primary(env_.ctx, std::chrono::steady_clock::now()))
    return env_.ctx.rpc().respond(in.reply_to(), Code::kUnavailable);
  const Answer a = answer(txid);
  rpc::Writer w;
  w.put(static_cast<uint8_t>(a.state));
  if (a.state == TxnState::kUntouched)
    w.put(static_cast<uint32_t>(std::min<int64_t>(a.complete_for.count(), std::numeric_limits<uint32_t>::max())));
  env_.ctx.rpc().respond(in.reply_to(), Code::kOk, w.span());
}

Task<void> Dandelion::recover(uint64_t txid) {
  const cluster::Topology& t = env_.ctx.topology();
  for (uint32_t attempt = 0;; ++attempt) {
    auto it = participant_.pending().find(txid);
    if (it == participant_.pending().end()) co_return;  // settled meanwhile, or this node was deposed
    // A decision made already (its settle did not complete) stands: it has been answered since.
    std::string seen = "decided before";
    std::optional<bool> commit = it->second.decision;
    if (!commit) commit = co_await decide(txid, it->second.participants, it->second.since, &seen);
    if (commit) {
      if (auto p = participant_.pending().find(txid); p != participant_.pending().end()) p->second.decision = *commit;
      const bool settled = co_await settle(txid, *commit);
      if (settled) {
        spdlog::warn("dandelion: transaction {:#x} of lost coordinator {} {} here ({})", txid,
                     t.nodes[cluster::writer_node(txid)].name, *commit ? "committed" : "aborted", seen);
        co_return;
      }
    }
    if (attempt % 100 == 99)
      spdlog::error("dandelion: transaction {:#x} of lost coordinator {} is still undecided ({})", txid,
                    t.nodes[cluster::writer_node(txid)].name, seen);
    co_await env_.ctx.sched().sleep_for(kRetry);
  }
}

// Each participant is asked at its shard's current primary: after a failover that one holds what its predecessor
// left undecided (inherited writes: "inherited hidden"), or what it decided since, or what it heard as a backup (a
// notice that showed the writes: "committed"). Its "unknown" tells nothing (its predecessor may have committed), so it
// counts as no answer. So does its "nothing replicated here", but for one case, where it decides an abort: the
// successor heard every write of its shard since before this participant locked (`locked_for` within its memory;
// writes are replicated only after every lock), so neither the coordinator's replicate nor a recovery's settle of the
// transaction reached the shard, and the predecessor committed none of its writes; no other answer calls for a commit
// or holds a write inherited hidden (the predecessor may have committed as a reader); the protocol reports nothing on
// locks alone (not dnl1); and, as a further margin while the rule is new, the predecessor was the transaction's
// coordinator node.
Task<std::optional<bool>> Dandelion::decide(uint64_t txid, std::vector<uint16_t> participants,
                                            Participant::Clock::time_point locked_at, std::string* seen) {
  const cluster::Topology& t = env_.ctx.topology();
  std::vector<uint16_t> nodes;
  std::vector<bool> successor;
  std::vector<bool> of_coordinator;  // a successor of the coordinator's node (the margin above)
  for (uint16_t n : participants) {
    const int shard = n < t.nodes.size() ? t.nodes[n].shard : -1;
    const uint16_t now = shard >= 0 ? env_.ctx.membership().primary(static_cast<uint32_t>(shard)) : n;
    if (std::find(nodes.begin(), nodes.end(), now) != nodes.end()) continue;
    nodes.push_back(now);
    successor.push_back(now != n);
    of_coordinator.push_back(now != n && n == cluster::writer_node(txid));
  }
  std::vector<Task<std::optional<Answer>>> asks;
  for (uint16_t n : nodes) asks.push_back(ask(n, txid));
  const auto answers = co_await rpc::when_all(std::move(asks));
  // (After the answers: a successor's memory must reach back before the lock from when it answered.)
  const auto locked_for = std::chrono::duration_cast<std::chrono::milliseconds>(Participant::Clock::now() - locked_at);
  seen->clear();
  bool complete = true, any_committed = false, any_applied = false, all_locked = true, any_hidden = false,
       any_untouched = false, any_aborted = false,
       undecided = true;  // every answer is locked or inherited hidden: nobody decided, nobody refused
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string_view name = nodes[i] < t.nodes.size() ? std::string_view(t.nodes[nodes[i]].name) : "?";
    *seen += fmt::format("{}{}: {}{}", seen->empty() ? "" : ", ", name,
                         answers[i] ? state_name(answers[i]->state) : "no answer", successor[i] ? " (successor)" : "");
    if (answers[i] && answers[i]->state == TxnState::kUntouched)
      *seen +=
          fmt::format(" within {} ms, locked here {} ms ago", answers[i]->complete_for.count(), locked_for.count());
    if (!answers[i]) {
      complete = false;
      continue;
    }
    const TxnState s = answers[i]->state == TxnState::kUntouched ? TxnState::kUnknown : answers[i]->state;
    // (an original participant's "untouched" is its "unknown")
    const bool untouched = of_coordinator[i] && answers[i]->state == TxnState::kUntouched && !steps_.hold_at_backups &&
                           locked_for < answers[i]->complete_for;
    if (successor[i] && s == TxnState::kUnknown && !untouched) {
      complete = false;
      continue;
    }
    any_untouched |= untouched;
    any_committed |= s == TxnState::kCommitted;
    any_aborted |= s == TxnState::kAborted;
    any_applied |= s == TxnState::kApplied;
    all_locked &= s == TxnState::kLocked;
    any_hidden |= s == TxnState::kHidden;
    undecided &= s == TxnState::kLocked || s == TxnState::kHidden;
  }
  // Every participant must answer: one that does not may have committed.
  if (!complete) co_return std::nullopt;
  if (any_committed && any_aborted) {  // decided both ways: a defect; deciding again would add to it
    spdlog::error("dandelion: transaction {:#x} is committed and aborted ({}); not deciding it here", txid, *seen);
    co_return std::nullopt;
  }
  // A write inherited hidden that nobody decided or refused elsewhere rolls forward: the coordinator had decided
  // commit (it replicated), and every participant still holds its locks.
  const bool commit = any_committed || (steps_.apply_in_replicate && any_applied) ||
                      (steps_.hold_at_backups && all_locked) || (any_hidden && undecided);
  // "Nothing replicated here" decides only an abort: a commit would need the writes the predecessor may have had.
  if (any_untouched && (commit || any_hidden)) co_return std::nullopt;
  co_return !env_.options.faults.recovery_always_aborts && commit;
}

Task<bool> Dandelion::settle(uint64_t txid, bool commit) {
  cluster::WorkerContext& ctx = env_.ctx;
  auto it = participant_.pending().find(txid);
  if (it == participant_.pending().end()) co_return true;
  const std::vector<Item> items = it->second.items;
  const std::map<std::string, std::optional<std::string>> before = it->second.before;
  std::vector<LogWrite> writes;  // what the replicas get
  std::vector<LogWrite> held;    // dnl1: the held writes' outcome at the backups
  TxRecord rewrite{ctx.next_writer_id(), "recovery-abort", realtime_ns(), 0, true, {}, {}};
  for (const Item& item : items) {
    if ((item.flags & kWrite) == 0) continue;
    std::optional<std::string> value;
    if (commit) {
      if ((item.flags & kDelete) == 0) value = item.value;
    } else {
      // The value before the write: the record's, unless it holds an inherited write (then what that replaced).
      std::optional<std::string> current;
      if (auto b = before.find(item.key); b != before.end()) {
        current = b->second;
      } else {
        std::string v;
        uint64_t word = 0;
        if (ctx.table().get(ctx.session(), item.key, &v, nullptr, &word) == store::OpStatus::kOk &&
            !cluster::lockword::absent(word))
          current = std::move(v);
      }
      if (current) {
        value = std::move(current);
        rewrite.reads.push_back(ReadRecord{item.key, item.version});
        rewrite.writes.push_back(WriteRecord{item.key, item.version + 2, false});
      }
    }
    writes.push_back(LogWrite{item.key, std::move(value), item.version + (commit ? 1 : 2)});
    held.push_back(LogWrite{item.key, std::nullopt, item.version + 1});
  }
  cluster::ReplicaLog::Scope scope = env_.log.begin();
  if (!writes.empty()) {
    const Code replicated = co_await env_.log.replicate_recovered(scope, txid, writes);
    if (replicated != Code::kOk) co_return false;  // (it cannot write as the primary now: asked again, or deposed)
  }
  it = participant_.pending().find(txid);
  if (it == participant_.pending().end()) co_return true;  // deposed meanwhile: the successor's copy decides
  for (const LogWrite& w : writes) env_.log.apply_at_primary(w);
  for (const Item& item : items) (void)cluster::release_lock(ctx.table(), ctx.session(), item.key, txid);
  participant_.finish_recovered(txid, commit);
  // The rewrite is a write of its own (a new version of the same value): the history must know who wrote it.
  if (!rewrite.writes.empty()) {
    rewrite.end_ns = realtime_ns();
    env_.record(std::move(rewrite));
  }
  co_await env_.log.resolve(scope, txid, writes, LogMode::kApply, true);
  if (steps_.hold_at_backups) co_await env_.log.resolve(scope, txid, std::move(held), LogMode::kHold, commit);
  co_return true;
}

}  // namespace rdx::txn::dandelion
