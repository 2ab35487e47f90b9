// RCC's MVCC (the RCC seed, section 3): multi-version timestamp ordering.
//  - Timestamp: a transaction's start (TxState::start_ns, CLOCK_REALTIME ns at begin), its id breaking ties.
//  - Read: one round trip to the key's primary (a direct call when that is this node), which returns the newest
//    version written at or before the timestamp, from the store or from the few older versions it keeps
//    (versions.h), and records the read timestamp; a version no longer kept aborts the transaction, and so does a
//    key held by a writer the read would have to see, if it is still held after a short wait. Reads never use a local
//    backup copy: the timestamps live at the primary.
//  - One-sided reads (primitives onesided or hybrid: the READ phase): a key another node is the primary of is read
//    with one one-sided READ of its record (txn/remote_records.h, through ReadPath): the latest version, with no
//    timestamp recorded. The commit's validation renews it at the primary (VersionTable::renew): still the latest,
//    not held, written before the timestamp, whose read timestamp it then raises to. Unlike a read at the primary it
//    cannot pick an older version: a latest version written after the transaction began aborts it (RCC's one-sided
//    MVCC reads its record's version slots; here older versions live beside the store, outside registered memory).
//  - Commit: Dandelion's dnl4 skeleton (txn/dandelion/), as OCC's: lock the write set at the primaries, where each
//    written key is admitted only if its latest version was written and read before the timestamp (VersionHooks),
//    validate WATCH expectations, replicate through the replica log, install at the unlock (the primary keeps the
//    version it replaces), release; reported after the unlock. Coordinator recovery is Dandelion's. Read-only
//    transactions commit without a round trip, unless they read one-sided.
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
#include <map>
#include <set>
#include <string>

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
// Running transactions whose reads at the primary a worker remembers (one-sided mode): one that ends without commit
// or abort would stay; past this many the oldest id goes (its commit then validates every read, which is safe).
constexpr size_t kMaxHeld = 4096;

class Mvcc final : public ConcurrencyControl {
 public:
  Mvcc(const CcEnv& env, std::shared_ptr<VersionTable> versions)
      : env_(env), versions_(std::move(versions)), commit_(env, steps(), versions_.get()) {}

  Status start() override {
    RDX_RETURN_IF_ERROR(commit_.start());
    return env_.ctx.rpc().on(env_.msgs.at(kVersionRead), [this](const rpc::Incoming& in) { serve(in); });
  }

  Task<Read> read(TxState& tx, const std::string& key) override {
    if (onesided() && cluster::primary_of(env_.ctx, key) != env_.ctx.self())
      co_return co_await env_.reads.read_at_primary(key);  // (renewed at commit)
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
    if (onesided()) {
      if (at_primary_.size() >= kMaxHeld && at_primary_.count(tx.id) == 0) at_primary_.erase(at_primary_.begin());
      at_primary_[tx.id].insert(key);
    }
    co_return out;
  }

  // At the transaction's timestamp, the reads made at the primary covered (each was checked when the primary
  // served it); one-sided ones are renewed.
  Task<Outcome> commit(TxState& tx) override {
    dandelion::CommitTs at;
    at.ts = tx.start_ns;
    if (onesided()) {
      at.covered = take(tx.id);
    } else {
      at.covers_every_read = true;
    }
    co_return co_await commit_.commit_at(tx, &at);
  }
  void abort(TxState& tx) override {
    at_primary_.erase(tx.id);
    commit_.abort(tx);
  }

 private:
  static dandelion::CommitSteps steps() {
    dandelion::CommitSteps s{};
    s.validate = true;  // (WATCH expectations, and one-sided reads: the others were checked when served)
    s.replicate = true;
    s.report_after_unlock = true;
    return s;
  }

  bool onesided() const { return env_.primitives.onesided_for(Phase::kRead); }

  std::set<std::string> take(uint64_t txid) {
    auto it = at_primary_.find(txid);
    if (it == at_primary_.end()) return {};
    std::set<std::string> out = std::move(it->second);
    at_primary_.erase(it);
    return out;
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
  // One-sided mode: the keys each running transaction of this worker read at their primary (the others it read
  // one-sided), dropped at commit or abort.
  std::map<uint64_t, std::set<std::string>> at_primary_;
};

}  // namespace

std::unique_ptr<ConcurrencyControl> make_mvcc(const CcEnv& env) {
  return std::make_unique<Mvcc>(env, VersionTable::of(env.ctx));
}

}  // namespace rdx::txn::mvcc
