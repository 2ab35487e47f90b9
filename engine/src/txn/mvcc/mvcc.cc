// RCC's MVCC (the RCC seed, section 3), over RPC: multi-version timestamp ordering.
//  - Timestamp: a transaction's start (TxState::start_ns, CLOCK_REALTIME ns at begin), its id breaking ties.
//  - Read: one round trip to the key's primary (a direct call when that is this node), which returns the newest
//    version written at or before the timestamp, from the store or from the few older versions it keeps
//    (versions.h), and records the read timestamp; a version no longer kept aborts the transaction, and so does a
//    key held by a writer the read would have to see, if it is still held after a short wait. Reads never use a local
//    backup copy: the timestamps live at the primary.
//  - Commit: Dandelion's dnl4 skeleton (txn/dandelion/), as OCC's: lock the write set at the primaries, where each
//    written key is admitted only if its latest version was written and read before the timestamp (VersionHooks),
//    validate WATCH expectations, replicate through the replica log, install at the unlock (the primary keeps the
//    version it replaces), release; reported after the unlock. Coordinator recovery is Dandelion's. Read-only
//    transactions commit without a round trip.
// Isolation: strictly serializable. Timestamp ordering serializes transactions in timestamp order (every read saw
// the last write before it in that order: a later write of a version someone read after it is refused, and a read
// after a held write's timestamp aborts rather than read around it). Real-time order follows when the timestamps
// come from one clock: a transaction that committed before another began installed its writes before reporting,
// with a timestamp taken before that, so the later one's timestamp is larger and its reads see them. The nodes of
// one host share CLOCK_REALTIME (the conformance suite's in-process cluster, the integration tests); across hosts
// the guarantee is serializability, and real-time order only up to the clocks' skew (a hybrid logical clock would
// not help there: two clients that only talk to each other outside the cluster carry no clock with them).
// Planted anomaly (TxnOptions::validation_off): reads take the latest version whatever its timestamp (too new) and
// record nothing, and the commit checks no timestamp.
#include "txn/dandelion/dandelion.h"
#include "txn/mvcc/versions.h"

namespace rdx::txn::mvcc {

namespace {

using dandelion::LockRead;
using dandelion::LockReadResult;
using rpc::Task;

// The read message, past Dandelion's in the protocol's range (it carries LockRead: txid, timestamp, key).
constexpr uint16_t kVersionRead = 16;
// A read that finds its key held by a writer it would have to see tries again for this long (the writer holds its
// locks only through its commit, a few round trips) before it aborts. It holds nothing meanwhile, so no wait cycle
// can form; a writer of a dead coordinator is decided by its participants' recovery within a few failure timeouts.
constexpr auto kMaxWait = std::chrono::milliseconds(20);
constexpr int kYieldsPerAttempt = 8;  // between attempts: worker-loop turns

class Mvcc final : public ConcurrencyControl {
 public:
  Mvcc(const CcEnv& env, std::shared_ptr<VersionTable> versions)
      : env_(env), versions_(std::move(versions)), commit_(env, steps(), versions_.get()) {}

  Status start() override {
    RDX_RETURN_IF_ERROR(commit_.start());
    return env_.ctx.rpc().on(env_.msgs.at(kVersionRead), [this](const rpc::Incoming& in) { serve(in); });
  }

  Task<Read> read(TxState& tx, const std::string& key) override {
    const LockRead request{tx.id, static_cast<uint64_t>(tx.start_ns), key};
    const auto give_up_at = std::chrono::steady_clock::now() + kMaxWait;
    Read out;
    std::optional<LockReadResult> r;
    for (;;) {
      r = co_await read_at_primary(request);
      if (!r || r->status != dandelion::ItemStatus::kLocked || std::chrono::steady_clock::now() >= give_up_at) break;
      for (int i = 0; i < kYieldsPerAttempt; ++i) co_await env_.ctx.sched().yield();
    }
    if (!r) {
      out.status = Code::kUnavailable;
      co_return out;
    }
    if (r->status != dandelion::ItemStatus::kOk) {
      out.status = Code::kAborted;
      co_return out;
    }
    out.status = r->present ? Code::kOk : Code::kNotFound;
    out.version = r->version;
    out.value = std::move(r->value);
    co_return out;
  }

  // At the transaction's timestamp, every read covered: each was checked when its primary served it.
  Task<Outcome> commit(TxState& tx) override {
    dandelion::CommitTs at;
    at.ts = tx.start_ns;
    at.covers_every_read = true;
    co_return co_await commit_.commit_at(tx, &at);
  }
  void abort(TxState& tx) override { commit_.abort(tx); }

 private:
  static dandelion::CommitSteps steps() {
    dandelion::CommitSteps s{};
    s.validate = true;  // (WATCH expectations only: reads were checked when served)
    s.replicate = true;
    s.report_after_unlock = true;
    return s;
  }

  // One attempt at the key's primary (a direct call when that is this node); nullopt when it did not answer.
  Task<std::optional<LockReadResult>> read_at_primary(const LockRead& request) {
    const uint16_t primary = cluster::primary_of(env_.ctx, request.key);
    ++(primary == env_.ctx.self() ? env_.counters.local_reads : env_.counters.remote_reads);
    if (primary == env_.ctx.self()) co_return as_primary(request);
    auto conn = env_.ctx.peer(primary);
    if (!conn) co_return std::nullopt;
    const std::string payload = request.encode();
    rpc::Response resp = co_await env_.ctx.rpc().call(*conn, env_.msgs.at(kVersionRead), rpc::as_bytes_of(payload));
    if (resp.status != Code::kOk) co_return std::nullopt;
    co_return LockReadResult::decode(resp.payload);
  }

  // The read at this node as the key's primary; nullopt unless it still served as the primary when it was done.
  std::optional<LockReadResult> as_primary(const LockRead& l) {
    if (!env_.ctx.membership().in_sync()) return std::nullopt;
    const VersionRead v =
        versions_->read(env_.ctx, l.key, Ts{static_cast<int64_t>(l.priority), l.txid}, env_.options.validation_off);
    if (!cluster::serves_as_primary(env_.ctx, std::chrono::steady_clock::now())) return std::nullopt;
    LockReadResult r;
    r.status = v.status == VersionRead::Status::kAborted  ? dandelion::ItemStatus::kChanged
               : v.status == VersionRead::Status::kLocked ? dandelion::ItemStatus::kLocked
                                                          : dandelion::ItemStatus::kOk;
    r.present = v.status == VersionRead::Status::kOk;
    r.version = v.version;
    r.value = v.value;
    return r;
  }

  void serve(const rpc::Incoming& in) {
    auto l = LockRead::decode(in.payload);
    if (!l || !cluster::is_replica_of(env_.ctx.topology(), env_.ctx.self(), l->key))
      return env_.ctx.rpc().respond(in.reply_to(), Code::kInvalidArgument);
    auto r = as_primary(*l);
    if (!r) return env_.ctx.rpc().respond(in.reply_to(), Code::kUnavailable);
    const std::string out = r->encode();
    env_.ctx.rpc().respond(in.reply_to(), Code::kOk, rpc::as_bytes_of(out));
  }

  CcEnv env_;
  std::shared_ptr<VersionTable> versions_;
  dandelion::Dandelion commit_;
};

}  // namespace

std::unique_ptr<ConcurrencyControl> make_mvcc(const CcEnv& env) {
  return std::make_unique<Mvcc>(env, VersionTable::of(env.ctx));
}

}  // namespace rdx::txn::mvcc
