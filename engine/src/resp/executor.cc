#include "resp/executor.h"

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <utility>

#include "cluster/kv_api.h"
#include "store/hashtable.h"
#include "txn/txn.h"

namespace rdx::resp {

using rpc::Task;

ClientStats& client_stats() {
  static ClientStats stats;
  return stats;
}

std::string arity_error(std::string_view name) {
  return fmt::format("ERR wrong number of arguments for '{}' command", name);
}

namespace {
// Redis' wording, including how it quotes and truncates the arguments.
std::string unknown_command_error(Args args) {
  std::string quoted;
  for (size_t i = 1; i < args.size() && quoted.size() < 128; ++i) {
    size_t room = 128 - quoted.size();
    quoted += fmt::format("'{}' ", args[i].substr(0, room));
  }
  return fmt::format("ERR unknown command '{}', with args beginning with: {}", args[0].substr(0, 128), quoted);
}

void reply_get(ReplyWriter& w, const cluster::KvResult& r) {
  if (r.status == Code::kOk) {
    w.bulk(r.value);
  } else if (r.status == Code::kNotFound) {
    w.null();
  } else {
    w.error(failure_line(r.status, r.error));
  }
}

void reply_set(ReplyWriter& w, const replication::WriteResult& r) {
  if (r.status == Code::kOk) {
    w.ok();
  } else {
    w.error(failure_line(r.status, r.error));
  }
}
}  // namespace

Executor::Executor(server::ServiceEnv& env, std::function<void(Connection&)> resumed)
    : env_(env), resumed_(std::move(resumed)) {}

void Executor::start(Connection& c) {
  c.busy = true;
  c.suspended = false;
  ++running_;
  rpc::spawn(drive(c));
  if (c.busy) c.suspended = true;
}

Task<void> Executor::drive(Connection& c) {
  // Requests already received still run after the peer half-closed (`printf 'PING\r\n' | nc` gets its PONG).
  while (!c.close_after_reply && !c.io_error && !stopping_ && c.pending_output() < kMaxPendingOutput) {
    size_t consumed = 0;
    ParseStatus st = c.parser.parse(c.in.unconsumed(), c.authenticated, &consumed);
    if (st == ParseStatus::kIncomplete) break;
    if (st == ParseStatus::kError) {
      c.writer().error("ERR " + c.parser.error());
      c.close_after_reply = true;
      break;
    }
    // The bytes stay where they are until the connection reads again (never while it is busy), so the argument
    // views remain valid while the command runs.
    c.in.consume(consumed);
    if (st == ParseStatus::kEmpty) continue;
    Args args = c.parser.args();
    ReplyWriter w = c.writer();
    const CommandSpec* spec = admit(c, args, w);
    if (spec == nullptr) continue;
    // The hot paths, without a coroutine frame of their own: plain GET and SET straight to the replication protocol.
    if (spec->id == Cmd::kGet && args[1].size() <= cluster::kMaxKeyBytes) {
      std::vector<std::string> keys = gather_get_run(c, args[1]);
      if (keys.size() == 1) {
        cluster::KvResult r = co_await env_.replication.get(std::move(keys[0]));
        reply_get(w, r);
        continue;
      }
      std::vector<Task<cluster::KvResult>> reads;
      reads.reserve(keys.size());
      for (std::string& k : keys) reads.push_back(env_.replication.get(std::move(k)));
      std::vector<cluster::KvResult> results = co_await rpc::when_all(std::move(reads));
      for (const cluster::KvResult& r : results) reply_get(w, r);
      continue;
    }
    if (spec->id == Cmd::kSet && args.size() == 3 && args[1].size() <= cluster::kMaxKeyBytes &&
        args[2].size() <= store::kMaxValueBytes) {
      std::string key(args[1]), value(args[2]);
      size_t sets = 1 + absorb_pipelined_sets(c, key, &value);
      replication::WriteResult r =
          co_await env_.replication.write(std::move(key), replication::Rmw::put(std::move(value)));
      for (size_t i = 0; i < sets; ++i) reply_set(w, r);
      continue;
    }
    if (run_sync(c, *spec, args, w)) continue;
    co_await run_async(c, *spec, args, w);
  }
  if (c.pending_output() >= kMaxPendingOutput) c.input_stalled = true;
  --running_;
  c.busy = false;
  if (c.suspended) resumed_(c);
}

bool Executor::reads_locally(std::string_view key) const {
  const cluster::Topology& t = env_.ctx.topology();
  if (!env_.ctx.membership().in_sync() || !cluster::is_replica_of(t, env_.ctx.self(), key)) return false;
  return t.local_backup_reads || cluster::primary_of(env_.ctx, key) == env_.ctx.self();
}

// Pipelined GETs of keys this node reads from its own table go to the replication protocol together, so they share one
// hashtable batch (one loop iteration) instead of one iteration each. The run stops at the first request that is not
// such a GET (it stays unconsumed and runs next, after the run). The replies keep request order; a read of another
// node's key is never overlapped, so a client's pipelined reads cannot be reordered by the network.
std::vector<std::string> Executor::gather_get_run(Connection& c, std::string_view first_key) {
  std::vector<std::string> keys;
  keys.emplace_back(first_key);
  if (c.in_multi || !reads_locally(first_key)) return keys;
  while (keys.size() < kMaxGetRun) {
    size_t consumed = 0;
    ParseStatus st = c.parser.parse(c.in.unconsumed(), c.authenticated, &consumed);
    if (st == ParseStatus::kEmpty) {
      c.in.consume(consumed);
      continue;
    }
    if (st != ParseStatus::kCommand) break;  // incomplete or an error: the main loop parses it again
    Args a = c.parser.args();
    if (a.size() != 2 || !equals_nocase(a[0], "get") || a[1].size() > cluster::kMaxKeyBytes || !reads_locally(a[1]))
      break;
    c.in.consume(consumed);
    ++commands_;
    keys.emplace_back(a[1]);
  }
  return keys;
}

// Pipelined plain SETs of the same key right after this one: only the last value can ever be read (nothing runs
// between them), so they are written once with it and each gets that write's reply. Returns how many were taken.
size_t Executor::absorb_pipelined_sets(Connection& c, std::string_view key, std::string* value) {
  size_t n = 0;
  if (c.in_multi) return 0;
  while (true) {
    size_t consumed = 0;
    if (c.parser.parse(c.in.unconsumed(), c.authenticated, &consumed) != ParseStatus::kCommand) break;
    Args a = c.parser.args();  // (anything else stays unconsumed and runs next)
    if (a.size() != 3 || !equals_nocase(a[0], "set") || a[1] != key || a[2].size() > store::kMaxValueBytes) break;
    value->assign(a[2]);
    c.in.consume(consumed);
    ++commands_;
    ++n;
  }
  return n;
}

uint64_t Executor::take_command_count() { return std::exchange(commands_, 0); }

const CommandSpec* Executor::admit(Connection& c, Args args, ReplyWriter& w) {
  ++commands_;
  const CommandSpec* spec = find_command(args[0]);
  if (spec == nullptr) {
    w.error(unknown_command_error(args));
    if (c.in_multi) c.multi_dirty = true;
    return nullptr;
  }
  if (!arity_ok(*spec, args.size())) {
    w.error(arity_error(spec->name));
    if (c.in_multi) c.multi_dirty = true;
    return nullptr;
  }
  if (!c.authenticated && !(spec->flags & kFlagNoAuth)) {
    w.error("NOAUTH Authentication required.");
    return nullptr;
  }
  c.last_command = spec->name;
  if (c.in_multi && !(spec->flags & kFlagImmediate)) {
    QueuedCommand q{spec, {}};
    q.args.reserve(args.size());
    for (std::string_view a : args) q.args.emplace_back(a);
    c.queued.push_back(std::move(q));
    w.queued();
    return nullptr;
  }
  return spec;
}

bool Executor::run_sync(Connection& c, const CommandSpec& spec, Args args, ReplyWriter& w) {
  switch (spec.id) {
    case Cmd::kPing:
      ping(args, w);
      return true;
    case Cmd::kEcho:
      w.bulk(args[1]);
      return true;
    case Cmd::kAuth:
      auth(c, args, w);
      return true;
    case Cmd::kHello:
      hello(c, args, w);
      return true;
    case Cmd::kInfo:
      info(args, w);
      return true;
    case Cmd::kClient:
      client(c, args, w);
      return true;
    case Cmd::kCommand:
      command(args, w);
      return true;
    case Cmd::kConfig:
      config(args, w);
      return true;
    case Cmd::kSelect:
      select(args, w);
      return true;
    case Cmd::kQuit:
      w.ok();
      c.close_after_reply = true;
      return true;
    case Cmd::kReset:
      reset(c, w);
      return true;
    case Cmd::kMulti:
      multi(c, w);
      return true;
    case Cmd::kDiscard:
      discard(c, w);
      return true;
    case Cmd::kUnwatch:
      c.watched.clear();
      w.ok();
      return true;
    default:
      return false;
  }
}

Task<void> Executor::run_async(Connection& c, const CommandSpec& spec, Args args, ReplyWriter& w) {
  switch (spec.id) {
    case Cmd::kExec:
      co_return co_await exec(c, w);
    case Cmd::kWatch:
      co_return co_await watch(c, args, w);
    case Cmd::kDbSize:
      co_return co_await dbsize(w);
    default:
      break;
  }
  if (spec.flags & kFlagKeys) co_return co_await run_keys(spec, args, w);
  w.error(fmt::format("ERR internal: no handler for '{}'", spec.name));
}

Task<void> Executor::run_keys(const CommandSpec& spec, Args args, ReplyWriter& w) {
  bool atomic = needs_transaction(spec, args);
  if (atomic && txn_unavailable(spec.name, w)) co_return;
  if (atomic || (env_.txn != nullptr && prefers_transaction(spec, args))) co_return co_await run_atomic(spec, args, w);
  DirectOps ops(env_.replication);
  co_await run_key_command(spec, args, ops, w);
}

bool Executor::txn_unavailable(std::string_view what, ReplyWriter& w) const {
  if (env_.txn != nullptr) return false;
  w.error(
      fmt::format("ERR '{}' needs transactions, and this cluster runs none (txn.protocol 'none', replication "
                  "'{}': single-key commands only)",
                  what, env_.ctx.topology().replication));
  return true;
}

Task<void> Executor::run_atomic(const CommandSpec& spec, Args args, ReplyWriter& w) {
  for (int attempt = 0; attempt < kMaxTxnAttempts; ++attempt) {
    std::unique_ptr<txn::Transaction> tx = env_.txn->begin();
    TxnOps ops(*tx);
    std::string reply;
    ReplyWriter tw(&reply, w.protocol());
    co_await run_key_command(spec, args, ops, tw);
    if (ops.failed()) {  // a read could not be served: nothing is applied, the reply says why
      tx->abort();
      w.buffer().append(reply);
      co_return;
    }
    txn::Outcome outcome = co_await tx->commit();
    if (outcome == txn::Outcome::kCommitted) {
      w.buffer().append(reply);
      co_return;
    }
    if (outcome == txn::Outcome::kUnavailable) {
      w.error(unavailable_commit_line(*tx));
      co_return;
    }
    co_await backoff(attempt, reinterpret_cast<uintptr_t>(&w));
  }
  w.error(fmt::format("ERR '{}' aborted by conflicting transactions {} times in a row; nothing was applied, retry",
                      spec.name, kMaxTxnAttempts));
}

// Conflict aborts back off by yielding to the worker loop (which keeps serving the network) an exponentially
// growing, jittered number of times. (Not the scheduler's timers: a worker blocked in poll() does not wake for them
// yet, so a 20 us sleep could last the 5 ms poll timeout.)
Task<void> Executor::backoff(int attempt, uint64_t seed) {
  uint64_t limit = uint64_t{2} << std::min(attempt, 9);
  uint64_t x = (seed + static_cast<uint64_t>(attempt)) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  uint64_t spins = limit / 2 + x % (limit / 2 + 1);
  for (uint64_t i = 0; i < spins; ++i) co_await env_.ctx.sched().yield();
}

}  // namespace rdx::resp
