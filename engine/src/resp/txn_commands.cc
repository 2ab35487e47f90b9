// MULTI/EXEC/DISCARD/WATCH: the queued block runs as one Transaction of the cluster's protocol. WATCHed keys are
// read at WATCH time and become preconditions (Transaction::expect) at EXEC, so EXEC answers a null reply exactly
// when a watched key changed, as Redis does. An abort with every watched key unchanged came from a conflict on other
// keys; Redis never fails such a block, so it is retried (bounded, with back-off).
#include <fmt/format.h>

#include <string>
#include <vector>

#include "resp/executor.h"
#include "txn/txn.h"

namespace rdx::resp {

using rpc::Task;

void Executor::multi(Connection& c, ReplyWriter& w) {
  if (c.in_multi) return w.error("ERR MULTI calls can not be nested");
  if (txn_unavailable("multi", w)) return;
  c.in_multi = true;
  c.multi_dirty = false;
  c.queued.clear();
  w.ok();
}

void Executor::discard(Connection& c, ReplyWriter& w) {
  if (!c.in_multi) return w.error("ERR DISCARD without MULTI");
  c.in_multi = false;
  c.multi_dirty = false;
  c.queued.clear();
  c.watched.clear();
  w.ok();
}

Task<void> Executor::watch(Connection& c, Args args, ReplyWriter& w) {
  if (c.in_multi) co_return w.error("ERR WATCH inside MULTI is not allowed");
  if (txn_unavailable("watch", w)) co_return;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string key(args[i]);
    if (c.watched.contains(key)) continue;  // the first WATCH of a key decides, as in Redis
    uint64_t version = 0;
    Code code = co_await version_of(key, &version);
    if (code != Code::kOk) co_return w.error(failure_line(code, fmt::format("could not read watched key '{}'", key)));
    c.watched.emplace(std::move(key), version);
  }
  w.ok();
}

// A committed version, read like a GET (the replication protocol's read: never a write in progress).
Task<Code> Executor::version_of(const std::string& key, uint64_t* version) {
  cluster::KvResult r = co_await env_.replication.get(key);
  if (r.status != Code::kOk && r.status != Code::kNotFound) co_return r.status;
  *version = r.status == Code::kOk ? r.version : 0;
  co_return Code::kOk;
}

Task<bool> Executor::watched_keys_changed(const std::unordered_map<std::string, uint64_t>& watched) {
  for (const auto& [key, version] : watched) {
    uint64_t now = 0;
    Code c = co_await version_of(key, &now);
    if (c != Code::kOk || now != version) co_return true;  // unknown counts as changed: fail safe (null reply)
  }
  co_return false;
}

txn::DeclaredKeys declared_keys(const std::vector<QueuedCommand>& queued,
                                const std::unordered_map<std::string, uint64_t>& watched) {
  txn::DeclaredKeys d;
  for (const QueuedCommand& q : queued) {
    const CommandSpec& spec = *q.spec;
    if (!(spec.flags & kFlagKeys) || spec.first_key == 0) continue;
    const int argc = static_cast<int>(q.args.size());
    const int last = spec.last_key < 0 ? argc + spec.last_key : spec.last_key;
    for (int i = spec.first_key; i <= last && i < argc; i += std::max(spec.key_step, 1)) {
      if (spec.flags & kFlagWrite) {
        d.writes.insert(q.args[i]);
      } else {
        d.reads.insert(q.args[i]);
      }
    }
  }
  for (const auto& [key, version] : watched) d.reads.insert(key);
  for (const std::string& k : d.writes) d.reads.erase(k);
  return d;
}

Task<void> Executor::exec(Connection& c, ReplyWriter& w) {
  if (!c.in_multi) co_return w.error("ERR EXEC without MULTI");
  std::vector<QueuedCommand> queued = std::move(c.queued);
  std::unordered_map<std::string, uint64_t> watched = std::move(c.watched);
  bool dirty = c.multi_dirty;
  c.in_multi = false;
  c.multi_dirty = false;
  c.queued.clear();
  c.watched.clear();
  if (dirty) co_return w.error("EXECABORT Transaction discarded because of previous errors.");
  if (txn_unavailable("exec", w)) co_return;

  std::vector<std::vector<std::string_view>> argv(queued.size());
  for (size_t i = 0; i < queued.size(); ++i) argv[i].assign(queued[i].args.begin(), queued[i].args.end());

  const txn::DeclaredKeys declared = declared_keys(queued, watched);
  for (int attempt = 0; attempt < kMaxTxnAttempts; ++attempt) {
    std::unique_ptr<txn::Transaction> tx = env_.txn->begin(&declared);
    for (const auto& [key, version] : watched) tx->expect(key, version);
    TxnOps ops(*tx);
    std::string replies;
    ReplyWriter tw(&replies, c.protocol);
    for (size_t i = 0; i < queued.size() && !ops.failed() && !ops.conflicted(); ++i) {
      const CommandSpec& spec = *queued[i].spec;
      Args args = argv[i];
      if (spec.flags & kFlagKeys) {
        co_await run_key_command(spec, args, ops, tw);
      } else if (!run_sync(c, spec, args, tw)) {
        co_await run_async(c, spec, args, tw);
      }
    }
    if (ops.failed()) {  // the cluster could not serve a read: nothing is applied
      tx->abort();
      co_return w.error(ops.error_line());
    }
    txn::Outcome outcome = co_await tx->commit();
    if (outcome == txn::Outcome::kCommitted) {
      w.array(queued.size());
      w.buffer().append(replies);
      co_return;
    }
    if (outcome == txn::Outcome::kUnavailable) co_return w.error(unavailable_commit_line(*tx));
    if (!watched.empty()) {  // (no co_await inside &&: GCC 12 miscompiles it)
      bool changed = co_await watched_keys_changed(watched);
      if (changed) co_return w.null_array();
    }
    co_await backoff(attempt, c.id);
  }
  w.error(fmt::format("ERR EXEC aborted by conflicting transactions {} times in a row; nothing was applied, retry",
                      kMaxTxnAttempts));
}

}  // namespace rdx::resp
