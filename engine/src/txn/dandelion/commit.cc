// The commit skeleton (Dandelion Figure 3): lock, validate, replicate, unlock, each step configured by CommitSteps.
// Every step sends one batch per primary and waits for all of them (when_all); steps at this node are direct calls.
// What reaches the backups goes through the cluster's replica log.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <set>

#include "txn/dandelion/dandelion.h"

namespace rdx::txn::dandelion {

using cluster::LogMode;
using cluster::LogWrite;
using rpc::Task;

std::unique_ptr<ConcurrencyControl> make_dnl4(const CcEnv& env) {
  //                                 lock_reads hold validate replicate apply_in_replicate report_after_unlock
  return std::make_unique<Dandelion>(env, CommitSteps{false, false, true, true, false, true});
}
std::unique_ptr<ConcurrencyControl> make_dnl2(const CcEnv& env) {
  return std::make_unique<Dandelion>(env, CommitSteps{true, false, false, true, true, false});
}
std::unique_ptr<ConcurrencyControl> make_dnl1(const CcEnv& env) {
  return std::make_unique<Dandelion>(env, CommitSteps{true, true, false, false, false, false});
}

Status Dandelion::start() {
  auto& rpc = env_.ctx.rpc();
  const rpc::MsgRange m = env_.msgs;
  // Only the primary answers (one still copying its snapshot, or deposed, refuses: its records may be stale). A
  // batch naming a key of another shard is malformed: it would lock a record this node does not own.
  auto request = [this](Msg type) {
    return [this, type](const rpc::Incoming& in) {
      auto b = Batch::decode(in.payload);
      const auto own = [this](const Item& it) { return owns(it.key); };
      if (!b || !std::all_of(b->items.begin(), b->items.end(), own))
        return env_.ctx.rpc().respond(in.reply_to(), Code::kInvalidArgument);
      auto results = as_primary(type, *b);
      if (!results) return env_.ctx.rpc().respond(in.reply_to(), Code::kUnavailable);
      std::string out = encode_results(*results);
      env_.ctx.rpc().respond(in.reply_to(), Code::kOk, rpc::as_bytes_of(out));
    };
  };
  RDX_RETURN_IF_ERROR(rpc.on(m.at(kLock), request(kLock)));
  RDX_RETURN_IF_ERROR(rpc.on(m.at(kValidate), request(kValidate)));
  // Applying and unlocking only need "done": ackable messages, acknowledged by smart acks. A transaction a recovery
  // fenced is refused (its outcome is the recovery's).
  auto ackable = [this](bool (Participant::*what)(const Batch&)) {
    return [this, what](const rpc::Incoming& in) {
      auto b = Batch::decode(in.payload);
      if (!b) return;
      if ((participant_.*what)(*b)) return env_.ctx.rpc().ack(in.reply_to());
      env_.ctx.rpc().refuse(in.reply_to(), Code::kAborted);
    };
  };
  RDX_RETURN_IF_ERROR(rpc.on(m.at(kApply), ackable(&Participant::apply)));
  RDX_RETURN_IF_ERROR(rpc.on(m.at(kUnlock), ackable(&Participant::unlock)));
  RDX_RETURN_IF_ERROR(rpc.on(m.at(kQuery), [this](const rpc::Incoming& in) { serve_query(in); }));
  if (steps_.lock_at_read)
    RDX_RETURN_IF_ERROR(rpc.on(m.at(kLockRead), [this](const rpc::Incoming& in) { serve_lock_read(in); }));
  crash_countdown_ = env_.options.faults.crash_after;
  rpc::spawn(recovery_loop());
  return Status::ok();
}

// At a key's primary: the work, then the check that this node still served as the primary when it was done.
std::optional<std::vector<ItemResult>> Dandelion::as_primary(Msg type, const Batch& b) {
  if (!env_.ctx.membership().in_sync()) return std::nullopt;
  std::vector<ItemResult> out = type == kLock ? participant_.lock(b) : participant_.validate(b);
  if (cluster::serves_as_primary(env_.ctx, std::chrono::steady_clock::now())) return out;
  if (type == kLock) participant_.release_taken(b, out);
  return std::nullopt;
}

Task<Dandelion::StepResult> Dandelion::step(uint16_t node, Msg type, Batch batch) {
  if (node == env_.ctx.self()) {
    switch (type) {
      case kLock:
      case kValidate: {
        auto results = as_primary(type, batch);
        if (!results) co_return StepResult{Code::kUnavailable, {}};
        co_return StepResult{Code::kOk, std::move(*results)};
      }
      case kApply:
      case kUnlock: {
        const bool done = type == kApply ? participant_.apply(batch) : participant_.unlock(batch);
        if (!done) co_return StepResult{Code::kAborted, {}};
        co_return StepResult{Code::kOk, std::vector<ItemResult>(batch.items.size())};
      }
      case kQuery:
      case kLockRead:
        break;
    }
  }
  auto conn = env_.ctx.peer(node);
  if (!conn) co_return StepResult{Code::kUnavailable, {}};
  std::string payload = batch.encode();
  if (type == kApply || type == kUnlock) {
    rpc::Response ack = co_await env_.ctx.rpc().call_ackable(*conn, env_.msgs.at(type), rpc::as_bytes_of(payload));
    co_return StepResult{ack.status, std::vector<ItemResult>(ack.status == Code::kOk ? batch.items.size() : 0)};
  }
  rpc::Response resp = co_await env_.ctx.rpc().call(*conn, env_.msgs.at(type), rpc::as_bytes_of(payload));
  if (resp.status != Code::kOk) co_return StepResult{resp.status, {}};
  auto rs = decode_results(resp.payload, batch.items.size());
  if (!rs) co_return StepResult{Code::kInternal, {}};
  co_return StepResult{Code::kOk, std::move(*rs)};
}

// Dnl-RO, and dnl4's validation step: every checked version still current at its primary.
Task<Outcome> Dandelion::validate_reads(const TxState& tx, const std::map<std::string, uint64_t>& checks, int64_t ts) {
  std::map<uint16_t, Batch> vals;
  for (const auto& [k, v] : checks)
    if (tx.writes.count(k) == 0) vals[primary_of(k)].items.push_back(Item{k, 0, v, {}});
  std::vector<Task<StepResult>> steps;
  for (auto& [node, b] : vals) {
    b.txid = tx.id;
    b.ts = ts;
    steps.push_back(step(node, kValidate, std::move(b)));
  }
  Outcome outcome = Outcome::kCommitted;
  for (auto& [code, items] : co_await rpc::when_all(std::move(steps))) {
    if (code != Code::kOk) outcome = Outcome::kUnavailable;
    for (const ItemResult& ir : items)
      if (ir.status != ItemStatus::kOk && outcome == Outcome::kCommitted) outcome = Outcome::kAborted;
  }
  co_return outcome;
}

Task<std::vector<uint16_t>> Dandelion::unlock_all(std::map<uint16_t, Batch> unlocks) {
  std::vector<uint16_t> nodes;
  std::vector<Task<StepResult>> steps;
  for (auto& [node, b] : unlocks) {
    nodes.push_back(node);
    steps.push_back(step(node, kUnlock, std::move(b)));
  }
  const auto results = co_await rpc::when_all(std::move(steps));
  std::vector<uint16_t> refused;
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].first != Code::kOk) refused.push_back(nodes[i]);
  co_return refused;
}

// A participant that did not take the coordinator's decision (a recovery fenced the transaction there, or it did not
// answer) is asked what was decided. A shard whose participant says its recovery decided otherwise is left out of the
// coordinator's resolve: that recovery resolves its writes itself, and a readable notice for a write it aborted would
// show the write at a backup whose rewrite had not arrived, or tell a future primary it committed (heard.h). One that
// does not answer keeps its writes in (the coordinator decided, and a participant that took it needs the notice).
// `told` (may be null): what the participants said, for the client.
Task<std::vector<LogWrite>> Dandelion::decided_alike(uint64_t txid, std::vector<uint16_t> refused,
                                                     std::vector<LogWrite> writes, bool committed, Outcome* told) {
  std::vector<Task<Outcome>> asks;
  for (uint16_t n : refused) asks.push_back(outcome_from(n, txid));
  const std::vector<Outcome> outcomes = co_await rpc::when_all(std::move(asks));
  const cluster::Topology& t = env_.ctx.topology();
  std::set<int> left;  // shards whose participant's recovery decides
  bool any_committed = false, any_aborted = false;
  for (size_t i = 0; i < refused.size(); ++i) {
    any_committed |= outcomes[i] == Outcome::kCommitted;
    any_aborted |= outcomes[i] == Outcome::kAborted;
    if (outcomes[i] == (committed ? Outcome::kAborted : Outcome::kCommitted) && refused[i] < t.nodes.size())
      left.insert(t.nodes[refused[i]].shard);
  }
  if (told != nullptr)
    *told = any_committed ? Outcome::kCommitted : any_aborted ? Outcome::kAborted : Outcome::kUnavailable;
  std::erase_if(writes, [&](const LogWrite& w) { return left.count(static_cast<int>(t.shard_of_key(w.key))) != 0; });
  co_return writes;
}

// A participant that refused this coordinator's apply or unlock: a recovery fenced the transaction (this coordinator
// looked lost) and decides it; the coordinator reports what it decided. kUnavailable when it does not say in time.
Task<Outcome> Dandelion::outcome_from(uint16_t node, uint64_t txid) {
  for (int i = 0; i < 250; ++i) {
    // A participant an epoch removed, or that every node excluded, will not say: the others decide without it.
    const cluster::Topology& t = env_.ctx.topology();
    if (t.nodes[node].role != cluster::Role::kData ||
        env_.ctx.membership().member(node) == cluster::MemberState::kFailed)
      co_return Outcome::kUnavailable;
    const std::optional<Answer> a = co_await ask(node, txid);
    if (a && a->state == TxnState::kCommitted) co_return Outcome::kCommitted;
    if (a && a->state == TxnState::kAborted) co_return Outcome::kAborted;
    co_await env_.ctx.sched().sleep_for(std::chrono::milliseconds(20));
  }
  co_return Outcome::kUnavailable;
}

// Unlocks and resolves the replica log, keeping the commit's membership scope until both are done.
Task<void> Dandelion::finish(cluster::ReplicaLog::Scope scope, std::map<uint16_t, Batch> unlocks, uint64_t txid,
                             std::vector<LogWrite> writes, LogMode mode, bool committed) {
  const std::vector<uint16_t> refused = co_await unlock_all(std::move(unlocks));
  if (!refused.empty()) writes = co_await decided_alike(txid, refused, std::move(writes), committed, nullptr);
  co_await env_.log.resolve(scope, txid, std::move(writes), mode, committed);
  done(txid, refused.empty());
}

// A commit whose unlock some participant did not take (refused, or the connection broke) stays below the watermark
// a while: that participant's recovery may still ask the others whether they committed it. The recovery loop lets
// it go (forget_retained).
void Dandelion::done(uint64_t txid, bool everywhere) {
  if (everywhere) {
    inflight_.erase(txid);
    return;
  }
  retained_.emplace_back(std::chrono::steady_clock::now() + kOutcomeRetention, txid);
}

void Dandelion::forget_retained(std::chrono::steady_clock::time_point now) {
  while (!retained_.empty() && retained_.front().first <= now) {  // (in expiry order: one retention for all)
    inflight_.erase(retained_.front().second);
    retained_.pop_front();
  }
}

bool Dandelion::crash_due(CrashPoint at, size_t lock_nodes) {
  return env_.options.faults.crash_point == at && lock_nodes >= 2 && crash_countdown_ > 0 && --crash_countdown_ == 0;
}

void Dandelion::crash(uint64_t txid) {
  spdlog::warn("dandelion: test crash of the coordinator of transaction {:#x} (rdxd --test-crash)", txid);
  spdlog::default_logger()->flush();
  std::raise(SIGKILL);
  std::abort();  // (not reached)
}

Task<Outcome> Dandelion::commit_at(TxState& tx, const CommitTs* at) {
  Outcome outcome = Outcome::kCommitted;
  const CommitSteps& s = steps_;

  // Versions to check at commit: what the transaction read, plus its expectations (WATCH). Reads a timestamped
  // commit covers (CommitTs) are checked again only if the transaction writes their keys.
  std::map<std::string, uint64_t> checks;
  for (const auto& [k, r] : tx.reads)
    if (at == nullptr || !at->covers(k) || tx.writes.count(k) != 0) checks[k] = r.status == Code::kOk ? r.version : 0;
  // (validation_off, the planted anomaly: no timestamp check either.)
  const int64_t ts = env_.options.validation_off || at == nullptr ? 0 : at->ts;
  for (const auto& [k, v] : tx.expects) {
    auto [it, fresh] = checks.emplace(k, v);
    if (!fresh && it->second != v) outcome = Outcome::kAborted;  // changed between WATCH and the read
  }
  if (outcome == Outcome::kCommitted && tx.writes.empty()) {  // Dnl-RO: validate the read set at the primaries
    // (2PL too: a participant's recovery may have released a read's lock, if this coordinator looked lost.)
    if (!checks.empty() && !env_.options.validation_off) outcome = co_await validate_reads(tx, checks, ts);
    ++env_.counters.read_only_commits;
  }
  if (outcome != Outcome::kCommitted || tx.writes.empty()) {
    abort(tx);  // (2PL: releases what the reads locked)
    co_return outcome;
  }

  inflight_.insert(tx.id);
  // Whether a kUnavailable outcome may have taken effect (tx.outcome_unknown): from the replication step on (a
  // backup may hold the writes, which a new primary shows; a participant's recovery may commit), and for dnl1 once
  // every lock it asked for may have been taken with its writes held at the backups. Before that nothing applied
  // anywhere, and a participant's recovery aborts.
  bool may_apply = false;
  cluster::ReplicaLog::Scope scope = env_.log.begin();
  std::map<std::string, uint64_t> new_versions;
  std::vector<LogWrite> log_writes;  // W as the replica log sees it
  for (const auto& [k, val] : tx.writes) log_writes.push_back(LogWrite{k, val, 0});

  // 1. Locking at the primaries (dnl1: W held at the backups in the same round trip). Values travel with the locks
  // (every protocol): a participant can then commit on its own if the coordinator dies (recovery.cc).
  std::map<uint16_t, Batch> locks;
  for (const auto& [k, val] : tx.writes) {
    Item it{k, static_cast<uint8_t>(kWrite | (val ? 0 : kDelete)), 0, {}};
    if (val) {
      it.flags |= kHasValue;  // logged with the lock, applied at unlock
      it.value = *val;
    }
    if (auto c = checks.find(k); c != checks.end() && !env_.options.validation_off) {
      it.flags |= kCheckVersion;
      it.version = c->second;
    }
    locks[primary_of(k)].items.push_back(std::move(it));
  }
  // (validation_off, a planted anomaly for tests: no lock checks the version the transaction read.)
  const uint8_t read_check = env_.options.validation_off ? 0 : kCheckVersion;
  if (s.lock_reads)
    for (const auto& [k, v] : checks)
      if (tx.writes.count(k) == 0) locks[primary_of(k)].items.push_back(Item{k, read_check, v, {}});
  std::vector<uint16_t> lock_nodes;
  for (const auto& [node, b] : locks) lock_nodes.push_back(node);
  std::vector<Task<StepResult>> lock_steps;
  for (auto& [node, b] : locks) {
    b.txid = tx.id;
    b.participants = lock_nodes;
    b.watermark = watermark();
    b.ts = ts;
    lock_steps.push_back(step(node, kLock, b));
  }
  if (s.hold_at_backups) {
    lock_steps.push_back([](cluster::ReplicaLog& log, const cluster::ReplicaLog::Scope& sc, uint64_t id,
                            const std::vector<LogWrite>& ws) -> Task<StepResult> {
      co_return StepResult{co_await log.replicate(sc, id, ws, LogMode::kHold), {}};
    }(env_.log, scope, tx.id, log_writes));
  }
  auto lock_results = co_await rpc::when_all(std::move(lock_steps));
  std::map<uint16_t, Batch> locked;  // what to unlock (items that were locked), by node
  bool lock_refused = false;         // a participant answered that it did not lock an item
  for (size_t i = 0; i < lock_results.size(); ++i) {
    auto& [code, items] = lock_results[i];
    if (code != Code::kOk) {
      outcome = Outcome::kUnavailable;
      continue;
    }
    if (i == lock_nodes.size()) continue;  // the hold at the backups
    const uint16_t node = lock_nodes[i];
    const Batch& sent = locks[node];
    Batch& to_unlock = locked[node];
    to_unlock.txid = tx.id;
    for (size_t j = 0; j < items.size(); ++j) {
      const Item& it = sent.items[j];
      if (items[j].status == ItemStatus::kOk) {
        to_unlock.items.push_back(release_of(it));
        if ((it.flags & kWrite) != 0) new_versions[it.key] = items[j].version + 1;
      } else {
        lock_refused = true;
        if (outcome == Outcome::kCommitted)
          outcome = items[j].status == ItemStatus::kNoMemory ? Outcome::kUnavailable : Outcome::kAborted;
      }
    }
  }
  may_apply = s.hold_at_backups && !lock_refused;

  if (outcome == Outcome::kCommitted && crash_due(CrashPoint::kAfterLock, lock_nodes.size())) crash(tx.id);

  // 2. Read validation (reads that were not locked).
  if (outcome == Outcome::kCommitted && s.validate && !env_.options.validation_off)
    outcome = co_await validate_reads(tx, checks, ts);
  for (LogWrite& w : log_writes)
    if (auto v = new_versions.find(w.key); v != new_versions.end()) w.version = v->second;

  // 3. Replication: the decision is commit from here on.
  bool commit = outcome == Outcome::kCommitted;
  if (commit && s.replicate) {
    may_apply = true;
    std::vector<Task<StepResult>> reps;
    reps.push_back([](cluster::ReplicaLog& log, const cluster::ReplicaLog::Scope& sc, uint64_t id,
                      const std::vector<LogWrite>& ws) -> Task<StepResult> {
      co_return StepResult{co_await log.replicate(sc, id, ws, LogMode::kApply), {}};
    }(env_.log, scope, tx.id, log_writes));
    std::vector<uint16_t> apply_nodes;
    if (s.apply_in_replicate) {
      std::map<uint16_t, Batch> applies;
      for (const LogWrite& w : log_writes)  // (the values were logged with the locks)
        applies[primary_of(w.key)].items.push_back(
            Item{w.key, static_cast<uint8_t>(kWrite | (w.value ? 0 : kDelete)), w.version, {}});
      for (auto& [node, b] : applies) {
        b.txid = tx.id;
        apply_nodes.push_back(node);
        reps.push_back(step(node, kApply, std::move(b)));
      }
    }
    auto rres = co_await rpc::when_all(std::move(reps));
    // The replica log failed (a backup refused, e.g. this coordinator was excluded): the writes are not durable
    // from here (the backups that took them copy their shard again). If no primary applied them, the transaction
    // aborts. A primary that applied them (dnl2) cannot undo it: the transaction is then the recovery's, which the
    // question fences and starts at once, and which commits (it applied) replicating from that primary itself.
    // Likewise a primary that did not apply (fenced by a recovery, or unreachable) leaves the outcome to a recovery.
    std::optional<uint16_t> applied, missed;
    for (size_t i = 1; i < rres.size(); ++i) (rres[i].first == Code::kOk ? applied : missed) = apply_nodes[i - 1];
    if (rres[0].first != Code::kOk && !applied) {
      commit = false;
      outcome = Outcome::kUnavailable;
    } else if (rres[0].first != Code::kOk || missed) {
      spdlog::warn("txn {:#x}: {}; its recovery decides", tx.id,
                   rres[0].first != Code::kOk
                       ? "the backups did not take it"
                       : fmt::format("{} did not apply it", env_.ctx.topology().nodes[*missed].name));
      outcome = co_await outcome_from(rres[0].first != Code::kOk ? *applied : *missed, tx.id);
    }
  }
  if (commit && crash_due(CrashPoint::kAfterReplicate, lock_nodes.size())) crash(tx.id);

  // 4. Unlocking: commit (apply where the protocol applies at unlock) or abort (release, drop placeholders).
  if (commit)
    for (auto& [node, b] : locked)
      for (Item& it : b.items) {
        it.flags |= kCommit;
        if ((it.flags & kWrite) == 0) continue;
        it.version = new_versions.at(it.key);
        if (s.apply_in_replicate) continue;  // dnl2 applied it already
        it.flags |= kApplyAtUnlock;          // the value was logged with the lock
      }
  if (commit && crash_due(CrashPoint::kMidUnlock, locked.size())) {
    auto first = locked.begin();
    co_await step(first->first, kUnlock, std::move(first->second));
    crash(tx.id);
  }
  const LogMode mode = s.hold_at_backups ? LogMode::kHold : LogMode::kApply;
  if (commit && s.report_after_unlock) {
    const std::vector<uint16_t> refused = co_await unlock_all(std::move(locked));
    if (!refused.empty()) log_writes = co_await decided_alike(tx.id, refused, std::move(log_writes), true, &outcome);
    rpc::spawn([](Dandelion* self, cluster::ReplicaLog::Scope sc, uint64_t id, std::vector<LogWrite> ws, LogMode m,
                  bool everywhere) -> Task<void> {
      co_await self->env_.log.resolve(sc, id, std::move(ws), m, true);
      self->done(id, everywhere);
    }(this, std::move(scope), tx.id, std::move(log_writes), mode, refused.empty()));
  } else if (commit || s.hold_at_backups) {
    rpc::spawn(finish(std::move(scope), std::move(locked), tx.id, std::move(log_writes), mode, commit));
  } else {
    rpc::spawn(finish(std::move(scope), std::move(locked), tx.id, {}, mode, false));
  }
  tx.outcome_unknown = outcome == Outcome::kUnavailable && may_apply;
  if ((commit && outcome == Outcome::kCommitted) || tx.outcome_unknown) tx.write_versions = std::move(new_versions);
  co_return outcome;
}

}  // namespace rdx::txn::dandelion
