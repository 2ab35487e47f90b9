// The commit skeleton (Dandelion Figure 3): lock, validate, replicate, unlock, each step configured by CommitSteps.
// Every step sends one batch per node and waits for all of them (when_all); steps at this node are direct calls.
#include <spdlog/spdlog.h>

#include "server/node_shared.h"
#include "txn/service.h"
#include "txn/tx.h"

namespace rdx::txn {

using rpc::Task;
using Clock = std::chrono::steady_clock;
using StepResult = std::pair<Code, std::vector<ItemResult>>;

namespace {
// Results of one step over several nodes, in the order the batches were sent.
struct Fanout {
  std::vector<uint16_t> nodes;
  std::vector<Task<StepResult>> tasks;
};
}  // namespace

Task<Outcome> TxnServiceImpl::commit(Tx& tx) {
  // The replicas this commit writes to are chosen from the membership of this generation (server/recovery.h).
  const uint64_t gen = ctx_.shared().member_gen();
  commit_started(gen);
  Outcome outcome = Outcome::kCommitted;
  std::map<std::string, uint64_t> new_versions;
  const CommitSteps& s = cfg_.steps;

  // Versions to check at commit: what the transaction read, plus its expectations (WATCH).
  std::map<std::string, uint64_t> checks;
  for (const auto& [k, r] : tx.reads_) checks[k] = r.status == Code::kOk ? r.version : 0;
  for (const auto& [k, v] : tx.expects_) {
    auto [it, fresh] = checks.emplace(k, v);
    if (!fresh && it->second != v) outcome = Outcome::kAborted;  // changed between WATCH and the read
  }
  if (tx.failed_) outcome = Outcome::kUnavailable;

  auto run = [this](std::map<uint16_t, Batch>& batches, rpc::MsgType type) {
    Fanout f;
    for (auto& [node, b] : batches) {
      if (b.items.empty()) continue;
      f.nodes.push_back(node);
      f.tasks.push_back(step(node, type, b));
    }
    return f;
  };

  std::map<uint16_t, Batch> locked;  // what to unlock (items that were locked), by node
  std::map<uint16_t, Batch> readable;
  auto primary_is = [this](uint16_t node, const std::string& k) { return primary_of(k) == node; };

  if (outcome == Outcome::kCommitted && tx.writes_.empty()) {
    // Dnl-RO: validate the read set at the primaries.
    if (!checks.empty() && !cfg_.validation_off) {
      std::map<uint16_t, Batch> vals;
      for (const auto& [k, v] : checks) vals[primary_of(k)].items.push_back(Item{k, 0, v, {}});
      for (auto& [n, b] : vals) b.txid = tx.id_;
      Fanout f = run(vals, kTxValidate);
      auto res = co_await rpc::when_all(std::move(f.tasks));
      for (auto& [code, items] : res) {
        if (code != Code::kOk) outcome = Outcome::kUnavailable;
        for (const ItemResult& ir : items)
          if (ir.status != ItemStatus::kOk && outcome == Outcome::kCommitted) outcome = Outcome::kAborted;
      }
    }
    ++stats_.read_only_commits;
  } else if (outcome == Outcome::kCommitted) {
    // 1. Locking.
    std::map<uint16_t, Batch> locks;
    for (const auto& [k, val] : tx.writes_) {
      Item it{k, static_cast<uint8_t>(kWrite | (val ? 0 : kDelete)), 0, {}};
      if (s.lock_backups && val) {
        it.flags |= kHasValue;  // logged with the lock, applied at unlock
        it.value = *val;
      }
      Item at_primary = it;
      if (auto c = checks.find(k); c != checks.end()) {
        at_primary.flags |= kCheckVersion;
        at_primary.version = c->second;
      }
      locks[primary_of(k)].items.push_back(std::move(at_primary));
      if (s.lock_backups)
        for (uint16_t b : live_backups(k)) locks[b].items.push_back(it);
    }
    if (s.lock_reads) {
      for (const auto& [k, v] : checks) {
        if (tx.writes_.count(k) != 0) continue;
        Item it{k, kCheckVersion, v, {}};
        locks[primary_of(k)].items.push_back(it);
        if (s.lock_backups)
          for (uint16_t b : live_backups(k)) locks[b].items.push_back(Item{k, 0, 0, {}});
      }
    }
    for (auto& [n, b] : locks) b.txid = tx.id_;
    Fanout f = run(locks, kTxLock);
    auto res = co_await rpc::when_all(std::move(f.tasks));
    for (size_t i = 0; i < res.size(); ++i) {
      uint16_t node = f.nodes[i];
      const Batch& sent = locks[node];
      auto& [code, items] = res[i];
      if (code != Code::kOk) {
        bool any_primary = false;
        for (const Item& it : sent.items) any_primary |= primary_is(node, it.key);
        if (any_primary) {
          outcome = Outcome::kUnavailable;
        } else {
          mark_failed(node, code);  // a backup is gone: commit with the live replicas
        }
        continue;
      }
      Batch& to_unlock = locked[node];
      to_unlock.txid = tx.id_;
      for (size_t j = 0; j < items.size(); ++j) {
        const Item& it = sent.items[j];
        if (items[j].status == ItemStatus::kOk) {
          to_unlock.items.push_back(Item{it.key, static_cast<uint8_t>(it.flags & (kWrite | kDelete)), 0, {}});
          if ((it.flags & kWrite) != 0 && primary_is(node, it.key)) new_versions[it.key] = items[j].version + 1;
        } else if (outcome == Outcome::kCommitted) {
          outcome = items[j].status == ItemStatus::kNoMemory ? Outcome::kUnavailable : Outcome::kAborted;
        }
      }
    }

    // 2. Read validation (reads that were not locked).
    if (outcome == Outcome::kCommitted && s.validate && !cfg_.validation_off) {
      std::map<uint16_t, Batch> vals;
      for (const auto& [k, v] : checks)
        if (tx.writes_.count(k) == 0) vals[primary_of(k)].items.push_back(Item{k, 0, v, {}});
      for (auto& [n, b] : vals) b.txid = tx.id_;
      Fanout vf = run(vals, kTxValidate);
      auto vres = co_await rpc::when_all(std::move(vf.tasks));
      for (auto& [code, items] : vres) {
        if (code != Code::kOk && outcome == Outcome::kCommitted) outcome = Outcome::kUnavailable;
        for (const ItemResult& ir : items)
          if (ir.status != ItemStatus::kOk && outcome == Outcome::kCommitted) outcome = Outcome::kAborted;
      }
    }

    // 3. Replication: the decision is commit from here on.
    if (outcome == Outcome::kCommitted && (s.replicate_backups || s.replicate_primaries)) {
      std::map<uint16_t, Batch> reps;
      for (const auto& [k, val] : tx.writes_) {
        Item it{k, static_cast<uint8_t>(kWrite | (val ? kHasValue : kDelete)), new_versions.at(k), val ? *val : ""};
        if (s.replicate_primaries) reps[primary_of(k)].items.push_back(it);
        if (s.replicate_backups)
          for (uint16_t b : live_backups(k)) {
            reps[b].items.push_back(it);
            readable[b].items.push_back(Item{k, 0, it.version, {}});
          }
      }
      for (auto& [n, b] : reps) b.txid = tx.id_;
      for (auto& [n, b] : readable) b.txid = tx.id_;
      Fanout rf = run(reps, kTxReplicate);
      auto rres = co_await rpc::when_all(std::move(rf.tasks));
      for (size_t i = 0; i < rres.size(); ++i) {
        uint16_t node = rf.nodes[i];
        bool failed = rres[i].first != Code::kOk;
        for (const ItemResult& ir : rres[i].second) failed |= ir.status != ItemStatus::kOk;
        if (!failed) continue;
        bool holds_primary = false;
        for (const Item& it : reps[node].items) holds_primary |= primary_is(node, it.key);
        if (holds_primary) {
          // dnl2 applies at the primary here; losing the primary now leaves the outcome to recovery.
          outcome = Outcome::kUnavailable;
          spdlog::error("txn {:#x}: primary {} failed during replication", tx.id_, ctx_.topology().nodes[node].name);
        } else {
          mark_failed(node, rres[i].first);
          readable.erase(node);
        }
      }
    }

    // 4. Unlocking: commit (apply where the protocol applies at unlock) or abort (release, drop placeholders).
    const bool commit = outcome == Outcome::kCommitted;
    for (auto& [node, b] : locked) {
      for (Item& it : b.items) {
        if (!commit) continue;
        it.flags |= kCommit;
        if ((it.flags & kWrite) == 0) continue;
        it.version = new_versions.at(it.key);
        // dnl4 applies the write at the primary now (values travel with the unlock); dnl1 from the lock's log;
        // dnl2 applied it during replication.
        const auto& val = tx.writes_.at(it.key);
        if (!s.lock_backups && !s.replicate_primaries && val) {
          it.flags |= kHasValue;
          it.value = *val;
        }
      }
    }
    if (commit && s.report_after_unlock) {
      Fanout uf = run(locked, kTxUnlock);
      co_await rpc::when_all(std::move(uf.tasks));
      co_await finish_unlocks({}, std::move(readable));
    } else {
      rpc::spawn(finish_unlocks(std::move(locked), commit ? std::move(readable) : std::map<uint16_t, Batch>{}));
    }
  }

  // Statistics and history.
  TxnTypeStats& ts = stats_.by_type[tx.type_];
  switch (outcome) {
    case Outcome::kCommitted:
      ++ts.committed;
      ts.latency.record(static_cast<uint64_t>(std::chrono::nanoseconds(Clock::now() - tx.t0_).count()));
      break;
    case Outcome::kAborted:
      ++ts.aborted;
      break;
    case Outcome::kUnavailable:
      ++ts.unavailable;
      break;
  }
  record(tx, outcome == Outcome::kCommitted, new_versions);
  if (outcome == Outcome::kCommitted) tx.committed_versions_ = std::move(new_versions);
  commit_finished(gen);
  co_return outcome;
}

}  // namespace rdx::txn
