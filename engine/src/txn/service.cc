#include "txn/service.h"

#include <spdlog/spdlog.h>
#include <time.h>

#include "server/node_shared.h"
#include "txn/lockword.h"
#include "txn/tx.h"

namespace rdx::txn {

using rpc::Task;
using Clock = std::chrono::steady_clock;

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kCommitted:
      return "committed";
    case Outcome::kAborted:
      return "aborted";
    case Outcome::kUnavailable:
      return "unavailable";
  }
  return "?";
}

Result<CommitSteps> find_commit_protocol(const std::string& name) {
  //                           name    lock_reads lock_backups validate repl_backups repl_primaries report_after_unlock
  static const CommitSteps kDnl4{"dnl4", false, false, true, true, false, true};
  static const CommitSteps kDnl2{"dnl2", true, false, false, true, true, false};
  static const CommitSteps kDnl1{"dnl1", true, true, false, false, false, false};
  if (name == "dnl4") return kDnl4;
  if (name == "dnl2") return kDnl2;
  if (name == "dnl1") return kDnl1;
  return error(Code::kUnsupported,
               "transaction protocol '{}' is not implemented by this rdxd (available: dnl4, dnl2, dnl1)", name);
}

namespace {
// Single-key operations retry conflicts (no-wait locking aborts them) until this deadline, then report them.
constexpr auto kOneTimeout = std::chrono::seconds(5);
constexpr auto kConnectGrace = std::chrono::seconds(2);
}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// Batched local reads.

struct TxnServiceImpl::PendingRead {
  std::string key;
  bool one = false;
  std::string value;
  std::coroutine_handle<> waiter;  // a local coordinator...
  Read* out = nullptr;
  rpc::ReplyTo reply;  // ...or a remote one
  bool remote = false;
};

class TxnServiceImpl::ReadAwaiter {
 public:
  ReadAwaiter(TxnServiceImpl* s, std::string key, bool one) : s_(s), key_(std::move(key)), one_(one) {}
  bool await_ready() {
    if (s_->cfg_.ht_batching) return false;
    result_ = one_ ? s_->participant_.read_one(key_) : s_->participant_.read(key_);
    return true;
  }
  void await_suspend(std::coroutine_handle<> h) {
    auto p = std::make_unique<PendingRead>();
    p->key = std::move(key_);
    p->one = one_;
    p->waiter = h;
    p->out = &result_;
    s_->batch_.push_back(std::move(p));
  }
  Read await_resume() { return std::move(result_); }

 private:
  TxnServiceImpl* s_;
  std::string key_;
  bool one_;
  Read result_;
};

TxnServiceImpl::ReadAwaiter TxnServiceImpl::local_read(std::string key, bool one) {
  return ReadAwaiter(this, std::move(key), one);
}

size_t TxnServiceImpl::run_batch() {
  if (batch_.empty()) return 0;
  std::vector<std::unique_ptr<PendingRead>> batch;
  batch.swap(batch_);
  std::vector<store::Request> reqs(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    reqs[i].op = store::Op::kGet;
    reqs[i].key = batch[i]->key;
    reqs[i].value_out = &batch[i]->value;
  }
  ctx_.table().execute(ctx_.session(), reqs);  // prefetches every bucket, then every record, then executes
  ++stats_.ht_batches;
  stats_.ht_batched_reads += batch.size();
  for (size_t i = 0; i < batch.size(); ++i) {
    PendingRead& p = *batch[i];
    Read r =
        Participant::interpret(reqs[i].status, std::move(p.value), reqs[i].version_out, reqs[i].lock_word_out, p.one);
    if (r.status == Code::kBusy && !p.one) r = participant_.read(p.key);  // the record was replaced mid-batch
    if (p.remote) {
      rpc::Writer w;
      w.put(r.version).bytes(r.value);
      ctx_.rpc().respond(p.reply, r.status, r.status == Code::kOk ? w.span() : std::span<const std::byte>{});
    } else {
      *p.out = std::move(r);
      ctx_.sched().ready(p.waiter);
    }
  }
  return batch.size();
}

// ---------------------------------------------------------------------------------------------------------------

TxnServiceImpl::TxnServiceImpl(server::WorkerContext& ctx, TxnConfig cfg)
    : ctx_(ctx), cfg_(cfg), participant_(ctx), rng_(ctx.self() * 1000003u + ctx.worker_index()) {}

TxnServiceImpl::~TxnServiceImpl() = default;

void TxnServiceImpl::serve_read(const rpc::Incoming& in, bool one) {
  rpc::Reader r(in.payload);
  std::string key(r.bytes(1024));
  if (!r.done() || key.empty()) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  if (!ctx_.shared().in_sync()) return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
  if (cfg_.ht_batching) {
    auto p = std::make_unique<PendingRead>();
    p->key = std::move(key);
    p->one = one;
    p->reply = in.reply_to();
    p->remote = true;
    batch_.push_back(std::move(p));
    return;
  }
  Read rd = one ? participant_.read_one(key) : participant_.read(key);
  rpc::Writer w;
  w.put(rd.version).bytes(rd.value);
  ctx_.rpc().respond(in.reply_to(), rd.status, rd.status == Code::kOk ? w.span() : std::span<const std::byte>{});
}

void TxnServiceImpl::start() {
  auto& rpc = ctx_.rpc();
  rpc.on(kTxRead, [this](const rpc::Incoming& in) { serve_read(in, false); });
  rpc.on(kTxReadOne, [this](const rpc::Incoming& in) { serve_read(in, true); });
  // A primary still copying its snapshot refuses locks and validations (its records are incomplete); a joining
  // backup takes them (dnl1 locks backups), like every write replicated to it.
  auto batch_handler = [this](auto fn) {
    return [this, fn](const rpc::Incoming& in) {
      auto b = Batch::decode(in.payload);
      if (!b) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
      if (!ctx_.shared().in_sync() && !b->items.empty() && primary_of(b->items[0].key) == ctx_.self())
        return ctx_.rpc().respond(in.reply_to(), Code::kUnavailable);
      std::vector<ItemResult> rs = fn(*b);
      std::string out = encode_results(rs);
      ctx_.rpc().respond(in.reply_to(), Code::kOk, rpc::as_bytes_of(out));
    };
  };
  rpc.on(kTxLock, batch_handler([this](const Batch& b) { return participant_.lock(b); }));
  rpc.on(kTxValidate, batch_handler([this](const Batch& b) { return participant_.validate(b); }));
  // Replication and unlocking only need "done": they are ackable messages, acknowledged by smart acks (one ack
  // covers every consecutive id applied since the last flush). A replica that cannot apply does not acknowledge;
  // the coordinator's call times out and it is excluded.
  rpc.on(kTxReplicate, [this](const rpc::Incoming& in) {
    auto b = Batch::decode(in.payload);
    if (!b || b->items.empty()) return;
    bool ok = true;
    for (const ItemResult& r : participant_.replicate(*b, primary_of(b->items[0].key) != ctx_.self()))
      ok &= r.status == ItemStatus::kOk;
    if (ok) ctx_.rpc().ack(in.reply_to());
  });
  rpc.on(kTxUnlock, [this](const rpc::Incoming& in) {
    auto b = Batch::decode(in.payload);
    if (!b) return;
    participant_.unlock(*b);
    ctx_.rpc().ack(in.reply_to());
  });
  rpc.on(kTxReadable, [this](const rpc::Incoming& in) {
    if (auto b = Batch::decode(in.payload)) participant_.make_readable(*b);
  });
}

uint64_t TxnServiceImpl::next_txid() {
  // Unique owner bits across the cluster: node (10 bits), worker (6 bits), sequence (32 bits).
  return (uint64_t{ctx_.self() & 0x3ffu} << 38) | (uint64_t{ctx_.worker_index() & 0x3fu} << 32) | ++seq_;
}

std::unique_ptr<Transaction> TxnServiceImpl::begin() { return std::make_unique<Tx>(*this, next_txid()); }

uint16_t TxnServiceImpl::primary_of(std::string_view key) const {
  const server::Topology& t = ctx_.topology();
  return t.primary_of(t.shard_of_key(key));
}

std::vector<uint16_t> TxnServiceImpl::live_backups(std::string_view key) const {
  const server::Topology& t = ctx_.topology();
  const auto& members = t.shards[t.shard_of_key(key)].members;
  std::vector<uint16_t> out;
  for (size_t i = 1; i < members.size(); ++i)
    if (ctx_.shared().member(members[i]) != server::MemberState::kFailed || members[i] == ctx_.self())
      out.push_back(members[i]);
  return out;
}

bool TxnServiceImpl::read_locally(std::string_view key, bool* at_backup) const {
  const server::Topology& t = ctx_.topology();
  if (!ctx_.shared().in_sync()) return false;
  uint32_t shard = t.shard_of_key(key);
  if (static_cast<int>(shard) != t.nodes[ctx_.self()].shard) return false;
  *at_backup = t.primary_of(shard) != ctx_.self();
  return !*at_backup || cfg_.local_backup_reads;
}

Task<Read> TxnServiceImpl::remote_read(uint16_t node, std::string key, bool one) {
  Read r;
  auto conn = ctx_.peer(node);
  if (!conn) {
    r.status = Code::kUnavailable;
    co_return r;
  }
  rpc::Writer w;
  w.bytes(key);
  rpc::Response resp = co_await ctx_.rpc().call(*conn, one ? kTxReadOne : kTxRead, w.span());
  r.status = resp.status;
  if (resp.status == Code::kOk) {
    rpc::Reader rd(resp.payload);
    r.version = rd.get<uint64_t>();
    r.value = std::string(rd.bytes());
    if (!rd.done()) r.status = Code::kInternal;
  }
  co_return r;
}

Task<Read> TxnServiceImpl::execute_read(std::string key, bool one) {
  bool at_backup = false;
  if (read_locally(key, &at_backup)) {
    ++stats_.local_reads;
    if (at_backup) ++stats_.local_backup_reads;
    Read r = co_await local_read(key, one);
    if (r.status != Code::kBusy || !at_backup) co_return r;
    // GetOne at a backup that holds an uncommitted write: ask the primary.
  }
  ++stats_.remote_reads;
  // The node first: the argument that moves `key` may be initialized before primary_of(key) is evaluated.
  const uint16_t primary = primary_of(key);
  co_return co_await remote_read(primary, std::move(key), one);
}

Task<Read> TxnServiceImpl::get_one(std::string key) {
  auto deadline = Clock::now() + kOneTimeout;
  for (int attempt = 0;; ++attempt) {
    Read r = co_await execute_read(key, true);
    if (r.status != Code::kBusy) co_return r;
    if (Clock::now() > deadline) {
      r.status = Code::kUnavailable;
      co_return r;
    }
    for (int i = 0; i < std::min(1 << std::min(attempt, 8), 256); ++i) co_await ctx_.sched().yield();
  }
}

// Single-key writes are one-key transactions, retried (with randomized back-off) while they lose conflicts.
Task<WriteResult> TxnServiceImpl::put_one(std::string key, std::string value) {
  auto deadline = Clock::now() + kOneTimeout;
  WriteResult res;
  for (int attempt = 0;; ++attempt) {
    auto tx = begin();
    tx->set_type("PutOne");
    tx->put(key, value);
    res.outcome = co_await tx->commit();
    res.version = tx->committed_version(key);
    if (res.outcome != Outcome::kAborted || Clock::now() > deadline) co_return res;
    co_await backoff(attempt);
  }
}

Task<WriteResult> TxnServiceImpl::remove_one(std::string key) {
  auto deadline = Clock::now() + kOneTimeout;
  WriteResult res;
  for (int attempt = 0;; ++attempt) {
    auto tx = begin();
    tx->set_type("DeleteOne");
    Read r = co_await tx->get(key);  // validated at commit: the key is deleted only if it still holds what we saw
    if (r.status == Code::kNotFound) {
      tx->abort();
      res.existed = false;
      res.outcome = Outcome::kCommitted;
      co_return res;
    }
    if (r.status != Code::kOk) {
      tx->abort();
      res.outcome = Outcome::kUnavailable;
      co_return res;
    }
    tx->remove(key);
    res.outcome = co_await tx->commit();
    res.version = tx->committed_version(key);
    if (res.outcome != Outcome::kAborted || Clock::now() > deadline) co_return res;
    co_await backoff(attempt);
  }
}

Task<void> TxnServiceImpl::backoff(int attempt) {
  int spins = static_cast<int>(rng_() % (2u << std::min(attempt, 8)));
  for (int i = 0; i < spins; ++i) co_await ctx_.sched().yield();
}

void TxnServiceImpl::commit_started(uint64_t gen) {
  active_gens_.insert(gen);
  ctx_.shared().publish_oldest_commit(ctx_.worker_index(), *active_gens_.begin());
}

void TxnServiceImpl::commit_finished(uint64_t gen) {
  active_gens_.erase(active_gens_.find(gen));
  ctx_.shared().publish_oldest_commit(ctx_.worker_index(),
                                      active_gens_.empty() ? server::NodeShared::kNoCommit : *active_gens_.begin());
}

void TxnServiceImpl::mark_failed(uint16_t node, Code why) {
  if (node == ctx_.self() || ctx_.shared().member(node) == server::MemberState::kFailed) return;
  ctx_.shared().set_member(node, server::MemberState::kFailed);
  spdlog::warn("txn: replica {} unreachable during commit ({}); excluded until it rejoins",
               ctx_.topology().nodes[node].name, code_name(why));
}

Task<std::pair<Code, std::vector<ItemResult>>> TxnServiceImpl::step(uint16_t node, rpc::MsgType type, Batch batch) {
  if (node == ctx_.self()) {
    switch (type) {
      case kTxLock:
        co_return std::pair{Code::kOk, participant_.lock(batch)};
      case kTxValidate:
        co_return std::pair{Code::kOk, participant_.validate(batch)};
      case kTxReplicate:
        co_return std::pair{Code::kOk, participant_.replicate(batch, primary_of(batch.items[0].key) != ctx_.self())};
      case kTxUnlock:
        participant_.unlock(batch);
        co_return std::pair{Code::kOk, std::vector<ItemResult>(batch.items.size())};
      default:
        co_return std::pair{Code::kInternal, std::vector<ItemResult>{}};
    }
  }
  auto conn = co_await connection_to(node);
  if (!conn) co_return std::pair{Code::kUnavailable, std::vector<ItemResult>{}};
  std::string payload = batch.encode();
  if (type == kTxReplicate || type == kTxUnlock) {
    rpc::Response ack = co_await ctx_.rpc().call_ackable(*conn, type, rpc::as_bytes_of(payload));
    co_return std::pair{ack.status, std::vector<ItemResult>(ack.status == Code::kOk ? batch.items.size() : 0)};
  }
  rpc::Response resp = co_await ctx_.rpc().call(*conn, type, rpc::as_bytes_of(payload));
  if (resp.status != Code::kOk) co_return std::pair{resp.status, std::vector<ItemResult>{}};
  auto rs = decode_results(resp.payload, batch.items.size());
  if (!rs) co_return std::pair{Code::kInternal, std::vector<ItemResult>{}};
  co_return std::pair{Code::kOk, std::move(*rs)};
}

// This worker's connection to `node`. A replica that has not been excluded but is not connected yet (it just
// joined, or the cluster is starting) gets a moment to connect; an excluded or dead one does not.
Task<std::optional<transport::ConnId>> TxnServiceImpl::connection_to(uint16_t node) {
  auto deadline = Clock::now() + kConnectGrace;
  for (;;) {
    if (auto conn = ctx_.peer(node)) co_return conn;
    if (ctx_.shared().member(node) == server::MemberState::kFailed || Clock::now() > deadline) co_return std::nullopt;
    co_await ctx_.sched().sleep_for(std::chrono::milliseconds(5));
  }
}

Task<void> TxnServiceImpl::finish_unlocks(std::map<uint16_t, Batch> unlocks, std::map<uint16_t, Batch> readable) {
  std::vector<Task<std::pair<Code, std::vector<ItemResult>>>> steps;
  for (auto& [node, b] : unlocks) steps.push_back(step(node, kTxUnlock, std::move(b)));
  for (auto& [node, b] : readable) {
    if (node == ctx_.self()) {
      participant_.make_readable(b);
    } else if (auto conn = ctx_.peer(node)) {
      std::string payload = b.encode();
      (void)ctx_.rpc().send_oneway(*conn, kTxReadable, rpc::as_bytes_of(payload));
    }
  }
  co_await rpc::when_all(std::move(steps));
}

void TxnServiceImpl::record(Tx& tx, bool committed, const std::map<std::string, uint64_t>& new_versions) {
  if (!cfg_.record_history) return;
  TxRecord r;
  r.id = tx.id_;
  r.type = tx.type_;
  r.start_ns = tx.start_ns_;
  r.end_ns = realtime_ns();
  r.committed = committed;
  for (const auto& [k, rd] : tx.reads_) r.reads.push_back({k, rd.status == Code::kOk ? rd.version : 0});
  for (const auto& [k, v] : tx.expects_)
    if (tx.reads_.count(k) == 0) r.reads.push_back({k, v});
  if (committed)
    for (const auto& [k, val] : tx.writes_) r.writes.push_back({k, new_versions.at(k), !val.has_value()});
  history_.push_back(std::move(r));
}

}  // namespace rdx::txn
