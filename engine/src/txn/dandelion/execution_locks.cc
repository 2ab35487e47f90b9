// 2PL's execution phase (CommitSteps::lock_at_read; NOWAIT and WAITDIE in txn/twopl/): each read locks its key at
// the key's primary and returns the record with the lock status, in one round trip (RCC's combined lock-and-read).
// The locks are held until the transaction ends: the commit's lock step finds them held (Participant::lock) and
// adds the written values and the participant list, and its unlock, or abort(), releases them.
//
// A read that finds the key held aborts its transaction (NOWAIT), or under WAITDIE waits while the holder is
// younger (a larger start timestamp) and aborts when it is older, or unknown (a single-key write, or a holder of
// another worker): the holder's timestamp comes back with the refusal, and the requester compares it here. Waiting
// only for younger transactions, no cycle of waits can form.
#include "txn/dandelion/dandelion.h"

namespace rdx::txn::dandelion {

using rpc::Task;

namespace {
// WAITDIE: how long an older transaction waits for a younger holder before it gives up (and aborts): the holder may
// be a coordinator that died, whose locks its participants' recovery releases within a few failure timeouts.
constexpr auto kMaxWait = std::chrono::milliseconds(200);
// Between two attempts: worker-loop turns (the scheduler's timers wait for the next poll timeout when idle).
constexpr int kYieldsPerAttempt = 8;
}  // namespace

std::optional<LockReadResult> Dandelion::lock_read_as_primary(const LockRead& l) {
  if (!env_.ctx.membership().in_sync()) return std::nullopt;
  LockReadResult r = participant_.lock_read(l);
  if (cluster::serves_as_primary(env_.ctx, std::chrono::steady_clock::now())) return r;
  if (r.status == ItemStatus::kOk) participant_.release_taken(Batch{l.txid, {}, 0, 0, {Item{l.key, 0, 0, {}}}}, {{}});
  return std::nullopt;
}

void Dandelion::serve_lock_read(const rpc::Incoming& in) {
  auto l = LockRead::decode(in.payload);
  if (!l || !owns(l->key)) return env_.ctx.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  auto r = lock_read_as_primary(*l);
  if (!r) return env_.ctx.rpc().respond(in.reply_to(), Code::kUnavailable);
  const std::string out = r->encode();
  env_.ctx.rpc().respond(in.reply_to(), Code::kOk, rpc::as_bytes_of(out));
}

Task<std::optional<LockReadResult>> Dandelion::lock_read_at(uint16_t node, const LockRead& l) {
  if (node == env_.ctx.self()) co_return lock_read_as_primary(l);
  auto conn = env_.ctx.peer(node);
  if (!conn) co_return std::nullopt;
  const std::string payload = l.encode();
  rpc::Response resp = co_await env_.ctx.rpc().call(*conn, env_.msgs.at(kLockRead), rpc::as_bytes_of(payload));
  if (resp.status != Code::kOk) co_return std::nullopt;
  co_return LockReadResult::decode(resp.payload);
}

Task<Read> Dandelion::read(TxState& tx, const std::string& key) {
  // (validation_off, a planted anomaly for tests: reads lock nothing, and the commit checks nothing they read.)
  if (!locks_reads()) co_return co_await env_.reads.read(key);
  const LockRead request{tx.id, static_cast<uint64_t>(tx.start_ns), key};
  const auto give_up_at = std::chrono::steady_clock::now() + kMaxWait;
  Read out;
  for (;;) {
    const uint16_t primary = primary_of(key);
    ++(primary == env_.ctx.self() ? env_.counters.local_reads : env_.counters.remote_reads);
    const std::optional<LockReadResult> r = co_await lock_read_at(primary, request);
    if (!r) {
      out.status = Code::kUnavailable;
      co_return out;
    }
    if (r->status == ItemStatus::kOk) {
      out.status = r->present ? Code::kOk : Code::kNotFound;
      out.version = r->version;
      out.value = std::move(r->value);
      co_return out;
    }
    const bool wait = steps_.wait_die && r->status == ItemStatus::kLocked && r->holder_priority > request.priority &&
                      std::chrono::steady_clock::now() < give_up_at;
    if (!wait) {
      out.status = r->status == ItemStatus::kNoMemory ? Code::kUnavailable : Code::kAborted;
      co_return out;
    }
    ++env_.counters.lock_waits;
    for (int i = 0; i < kYieldsPerAttempt; ++i) co_await env_.ctx.sched().yield();
  }
}

// What the execution reads locked: every key read (a read that found the key absent locked it too).
void Dandelion::release_reads(const TxState& tx) {
  std::map<uint16_t, Batch> unlocks;
  for (const auto& [key, r] : tx.reads) {
    Batch& b = unlocks[primary_of(key)];
    b.txid = tx.id;
    b.items.push_back(Item{key, 0, 0, {}});
  }
  if (unlocks.empty()) return;
  rpc::spawn([](Dandelion* self, std::map<uint16_t, Batch> batches) -> Task<void> {
    co_await self->unlock_all(std::move(batches));
  }(this, std::move(unlocks)));
}

void Dandelion::abort(TxState& tx) {
  if (locks_reads()) release_reads(tx);
}

}  // namespace rdx::txn::dandelion
