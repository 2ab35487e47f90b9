// The commit skeleton (Dandelion Figure 3): lock, validate, replicate, unlock, each step configured by CommitSteps.
// Every step sends one batch per primary and waits for all of them (when_all); steps at this node are direct calls.
// What reaches the backups goes through the cluster's replica log.
#include <spdlog/spdlog.h>

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
  // Only the primary answers (one still copying its snapshot, or deposed, refuses: its records may be stale).
  auto request = [this](Msg type) {
    return [this, type](const rpc::Incoming& in) {
      auto b = Batch::decode(in.payload);
      if (!b) return env_.ctx.rpc().respond(in.reply_to(), Code::kInvalidArgument);
      auto results = as_primary(type, *b);
      if (!results) return env_.ctx.rpc().respond(in.reply_to(), Code::kUnavailable);
      std::string out = encode_results(*results);
      env_.ctx.rpc().respond(in.reply_to(), Code::kOk, rpc::as_bytes_of(out));
    };
  };
  RDX_RETURN_IF_ERROR(rpc.on(m.at(kLock), request(kLock)));
  RDX_RETURN_IF_ERROR(rpc.on(m.at(kValidate), request(kValidate)));
  // Applying and unlocking only need "done": ackable messages, acknowledged by smart acks.
  RDX_RETURN_IF_ERROR(rpc.on(m.at(kApply), [this](const rpc::Incoming& in) {
    if (auto b = Batch::decode(in.payload)) {
      participant_.apply(*b);
      env_.ctx.rpc().ack(in.reply_to());
    }
  }));
  return rpc.on(m.at(kUnlock), [this](const rpc::Incoming& in) {
    if (auto b = Batch::decode(in.payload)) {
      participant_.unlock(*b);
      env_.ctx.rpc().ack(in.reply_to());
    }
  });
}

// At a key's primary: the work, then the check that this node still served as the primary when it was done.
std::optional<std::vector<ItemResult>> Dandelion::as_primary(Msg type, const Batch& b) {
  if (!env_.ctx.membership().in_sync()) return std::nullopt;
  std::vector<ItemResult> out = type == kLock ? participant_.lock(b) : participant_.validate(b);
  if (cluster::serves_as_primary(env_.ctx, std::chrono::steady_clock::now())) return out;
  if (type == kLock) {
    Batch taken;
    taken.txid = b.txid;
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i].status == ItemStatus::kOk) taken.items.push_back(release_of(b.items[i]));
    participant_.unlock(taken);
  }
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
        co_return StepResult{Code::kOk, participant_.apply(batch)};
      case kUnlock:
        participant_.unlock(batch);
        co_return StepResult{Code::kOk, std::vector<ItemResult>(batch.items.size())};
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
Task<Outcome> Dandelion::validate_reads(const TxState& tx, const std::map<std::string, uint64_t>& checks) {
  std::map<uint16_t, Batch> vals;
  for (const auto& [k, v] : checks)
    if (tx.writes.count(k) == 0) vals[primary_of(k)].items.push_back(Item{k, 0, v, {}});
  std::vector<Task<StepResult>> steps;
  for (auto& [node, b] : vals) {
    b.txid = tx.id;
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

Task<void> Dandelion::unlock_all(std::map<uint16_t, Batch> unlocks) {
  std::vector<Task<StepResult>> steps;
  for (auto& [node, b] : unlocks) steps.push_back(step(node, kUnlock, std::move(b)));
  co_await rpc::when_all(std::move(steps));
}

// Unlocks and resolves the replica log, keeping the commit's membership scope until both are done.
Task<void> Dandelion::finish(cluster::ReplicaLog::Scope scope, std::map<uint16_t, Batch> unlocks, uint64_t txid,
                             std::vector<LogWrite> writes, LogMode mode, bool committed) {
  co_await unlock_all(std::move(unlocks));
  co_await env_.log.resolve(scope, txid, std::move(writes), mode, committed);
}

Task<Outcome> Dandelion::commit(TxState& tx) {
  Outcome outcome = Outcome::kCommitted;
  const CommitSteps& s = steps_;

  // Versions to check at commit: what the transaction read, plus its expectations (WATCH).
  std::map<std::string, uint64_t> checks;
  for (const auto& [k, r] : tx.reads) checks[k] = r.status == Code::kOk ? r.version : 0;
  for (const auto& [k, v] : tx.expects) {
    auto [it, fresh] = checks.emplace(k, v);
    if (!fresh && it->second != v) outcome = Outcome::kAborted;  // changed between WATCH and the read
  }
  if (outcome != Outcome::kCommitted) co_return outcome;
  if (tx.writes.empty()) {  // Dnl-RO: validate the read set at the primaries
    if (!checks.empty() && !env_.options.validation_off) outcome = co_await validate_reads(tx, checks);
    ++env_.counters.read_only_commits;
    co_return outcome;
  }

  cluster::ReplicaLog::Scope scope = env_.log.begin();
  std::map<std::string, uint64_t> new_versions;
  std::vector<LogWrite> log_writes;  // W as the replica log sees it
  for (const auto& [k, val] : tx.writes) log_writes.push_back(LogWrite{k, val, 0});

  // 1. Locking at the primaries (dnl1: W held at the backups in the same round trip).
  std::map<uint16_t, Batch> locks;
  for (const auto& [k, val] : tx.writes) {
    Item it{k, static_cast<uint8_t>(kWrite | (val ? 0 : kDelete)), 0, {}};
    if (s.hold_at_backups && val) {
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
  std::vector<Task<StepResult>> lock_steps;
  for (auto& [node, b] : locks) {
    b.txid = tx.id;
    lock_nodes.push_back(node);
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
      } else if (outcome == Outcome::kCommitted) {
        outcome = items[j].status == ItemStatus::kNoMemory ? Outcome::kUnavailable : Outcome::kAborted;
      }
    }
  }

  // 2. Read validation (reads that were not locked).
  if (outcome == Outcome::kCommitted && s.validate && !env_.options.validation_off)
    outcome = co_await validate_reads(tx, checks);
  for (LogWrite& w : log_writes)
    if (auto v = new_versions.find(w.key); v != new_versions.end()) w.version = v->second;

  // 3. Replication: the decision is commit from here on.
  if (outcome == Outcome::kCommitted && s.replicate) {
    std::vector<Task<StepResult>> reps;
    reps.push_back([](cluster::ReplicaLog& log, const cluster::ReplicaLog::Scope& sc, uint64_t id,
                      const std::vector<LogWrite>& ws) -> Task<StepResult> {
      co_return StepResult{co_await log.replicate(sc, id, ws, LogMode::kApply), {}};
    }(env_.log, scope, tx.id, log_writes));
    std::vector<uint16_t> apply_nodes;
    if (s.apply_in_replicate) {
      std::map<uint16_t, Batch> applies;
      for (const LogWrite& w : log_writes)
        applies[primary_of(w.key)].items.push_back(Item{
            w.key, static_cast<uint8_t>(kWrite | (w.value ? kHasValue : kDelete)), w.version, w.value.value_or("")});
      for (auto& [node, b] : applies) {
        b.txid = tx.id;
        apply_nodes.push_back(node);
        reps.push_back(step(node, kApply, std::move(b)));
      }
    }
    auto rres = co_await rpc::when_all(std::move(reps));
    for (size_t i = 0; i < rres.size(); ++i) {
      if (rres[i].first == Code::kOk) continue;
      // The replica log failed (the writes are not durable), or a primary failed while applying (dnl2): the
      // outcome is left to recovery.
      outcome = Outcome::kUnavailable;
      if (i > 0)
        spdlog::error("txn {:#x}: primary {} failed while applying", tx.id,
                      env_.ctx.topology().nodes[apply_nodes[i - 1]].name);
    }
  }

  // 4. Unlocking: commit (apply where the protocol applies at unlock) or abort (release, drop placeholders).
  const bool commit = outcome == Outcome::kCommitted;
  if (commit)
    for (auto& [node, b] : locked)
      for (Item& it : b.items) {
        it.flags |= kCommit;
        if ((it.flags & kWrite) == 0) continue;
        it.version = new_versions.at(it.key);
        if (s.apply_in_replicate) continue;  // dnl2 applied it already
        it.flags |= kApplyAtUnlock;          // dnl1 logged the value with the lock; dnl4 sends it now
        const auto& val = tx.writes.at(it.key);
        if (!s.hold_at_backups && val) {
          it.flags |= kHasValue;
          it.value = *val;
        }
      }
  const LogMode mode = s.hold_at_backups ? LogMode::kHold : LogMode::kApply;
  if (commit && s.report_after_unlock) {
    co_await unlock_all(std::move(locked));
    rpc::spawn(finish(std::move(scope), {}, tx.id, std::move(log_writes), mode, true));
  } else if (commit || s.hold_at_backups) {
    rpc::spawn(finish(std::move(scope), std::move(locked), tx.id, std::move(log_writes), mode, commit));
  } else {
    rpc::spawn(finish(std::move(scope), std::move(locked), tx.id, {}, mode, false));
  }
  if (commit) tx.committed_versions = std::move(new_versions);
  co_return outcome;
}

}  // namespace rdx::txn::dandelion
