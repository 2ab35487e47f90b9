// SUNDIAL (the RCC seed; Yu et al., VLDB'18): logical leases.
//  - Read: one round trip to the key's primary (a direct call when that is this node), which returns the latest
//    version with its lease [wts, rts] and extends rts to its clock (leases.h). Never a local backup copy: the
//    leases live at the primary. With the READ phase one-sided (primitives onesided or hybrid), as RCC's one-sided
//    SUNDIAL does, a key whose primary is another node is read with one one-sided READ of its record
//    (txn/remote_records.h, through ReadPath) and no lease: the read extends nothing, and the commit renews it.
//  - Commit timestamp: read-only, max(start, wts of every read); else max(now, wts of every read, rts + 1 of every
//    key it read and writes), taken before the locks. A read whose lease is unknown (one-sided) adds nothing, and
//    makes even a read-only transaction commit at now: a key it read one-sided and writes may then be refused at
//    the lock (its rts may reach past now), an abort the lease would have avoided. The commit is Dandelion's dnl4
//    skeleton (txn/dandelion/) at that timestamp (dandelion::CommitTs): lock the write set at the primaries, each
//    written key admitted only if the timestamp exceeds its lease (VersionHooks::admit); renew every read whose rts is
//    below the timestamp (validation: unchanged and not locked by another, then rts extended to it; else abort);
//    replicate through the replica log; install with wts = rts = timestamp at the unlock; release. Coordinator recovery
//    is Dandelion's. A read-only transaction whose leases all reach its timestamp commits without a round trip.
// Isolation: strictly serializable. Serializable in timestamp order (Sundial's argument): a read is valid at the
// timestamp (wts <= ts <= rts, by the timestamp's choice and the renewal), a write at ts exceeds every rts of the
// version it replaces, and a lease does not grow while its key is locked, so every read saw the last write before
// it in that order. Real time: timestamps never run ahead of the physical clock that a later start reads. By
// induction, a commit timestamp is at most the clock when it was taken: `now` and `start` are clock readings, wts is
// an earlier commit's timestamp (or a primary's clock reading) and rts a clock reading or an earlier commit's
// timestamp (rts + 1 is at most 1 ns past the clock, and a commit reports round trips later). So if T1 reported
// before T2 began,
// ts(T1) <= start(T2) <= ts(T2). Equal timestamps order only a write before its reader (a write's timestamp
// exceeds every lease of the version it replaces), and T2 cannot write anything T1 read. So T2 follows T1. Leases
// are extended only to clock readings or commit timestamps, so they do not reach ahead of time either (that bounds
// the aborts of writers, not the argument). That needs one clock, as MVCC's: the nodes of one host (the conformance
// suite, the integration tests) share CLOCK_REALTIME; across hosts real-time order holds up to the clocks' skew.
// Choosing the timestamp before locking (not from the locked keys' leases, as Sundial does) keeps Dandelion's lock
// step unchanged: a blind write aborts if a read since `now` extended its key's lease.
// Planted anomaly (TxnOptions::validation_off): no renewal or validation, and writes are admitted at no timestamp.
#include <algorithm>

#include "txn/dandelion/dandelion.h"
#include "txn/per_node.h"
#include "txn/sundial/leases.h"

namespace rdx::txn::sundial {

namespace {

using dandelion::LockRead;
using rpc::Task;

// The read message, past Dandelion's in the protocol's range (it carries LockRead: txid, 0, key).
constexpr uint16_t kLeaseRead = 16;
// Running transactions whose read leases a worker keeps: one that ends without commit or abort (given up while a
// read was on its way) would stay; past this many the oldest id goes (its commit then assumes nothing of it).
constexpr size_t kMaxHeld = 4096;

struct Reply {
  LeaseRead r;

  std::string encode() const {
    rpc::Writer w;
    w.put(static_cast<uint8_t>(r.status)).put(r.version).put(r.lease.wts).put(r.lease.rts);
    w.bytes(r.value);
    return w.data();
  }
  static std::optional<LeaseRead> decode(std::string_view payload) {
    rpc::Reader in(payload);
    LeaseRead r;
    const auto s = in.get<uint8_t>();
    r.version = in.get<uint64_t>();
    r.lease.wts = in.get<int64_t>();
    r.lease.rts = in.get<int64_t>();
    r.value = std::string(in.bytes(1 << 20));
    if (!in.done() || s > static_cast<uint8_t>(LeaseRead::Status::kBusy)) return std::nullopt;
    r.status = static_cast<LeaseRead::Status>(s);
    return r;
  }
};

class Sundial final : public ConcurrencyControl {
 public:
  Sundial(const CcEnv& env, std::shared_ptr<LeaseTable> leases)
      : env_(env), leases_(std::move(leases)), commit_(env, steps(), leases_.get()) {}

  Status start() override {
    RDX_RETURN_IF_ERROR(commit_.start());
    return env_.ctx.rpc().on(env_.msgs.at(kLeaseRead), [this](const rpc::Incoming& in) { serve(in); });
  }

  Task<Read> read(TxState& tx, const std::string& key) override {
    // The READ phase one-sided: a key another node is the primary of is read with one READ of its record, without
    // its lease. The commit renews such a read.
    if (env_.primitives.onesided_for(Phase::kRead) && cluster::primary_of(env_.ctx, key) != env_.ctx.self())
      co_return co_await env_.reads.read_at_primary(key);
    const LockRead request{tx.id, 0, key};  // (named: GCC 12 mishandles a temporary in a co_await expression)
    std::optional<LeaseRead> r = co_await read_at_primary(request);
    Read out;
    if (!r) {
      out.status = Code::kUnavailable;
      co_return out;
    }
    if (r->status == LeaseRead::Status::kBusy) {
      out.status = Code::kAborted;
      co_return out;
    }
    if (held_.size() >= kMaxHeld && held_.count(tx.id) == 0) held_.erase(held_.begin());  // (see kMaxHeld)
    held_[tx.id][key] = r->lease;
    out.status = r->status == LeaseRead::Status::kOk ? Code::kOk : Code::kNotFound;
    out.version = r->version;
    out.value = std::move(r->value);
    co_return out;
  }

  Task<Outcome> commit(TxState& tx) override {
    const std::map<std::string, Lease> leases = take(tx.id);
    // (A read whose lease is unknown, one-sided or dropped (kMaxHeld), has a wts at most the clock now: such a
    // transaction commits at now, and the read is renewed, not covered; the renewal refuses a wts past now.)
    const bool all_known =
        std::all_of(tx.reads.begin(), tx.reads.end(), [&](const auto& r) { return leases.count(r.first) != 0; });
    dandelion::CommitTs at;
    at.ts = tx.writes.empty() && all_known ? tx.start_ns : realtime_ns();
    for (const auto& [k, l] : leases) {
      at.ts = std::max(at.ts, l.wts);
      if (tx.writes.count(k) != 0) at.ts = std::max(at.ts, l.rts + 1);
    }
    for (const auto& [k, l] : leases)
      if (l.rts >= at.ts) at.covered.insert(k);
    co_return co_await commit_.commit_at(tx, &at);
  }

  void abort(TxState& tx) override {
    held_.erase(tx.id);
    commit_.abort(tx);
  }

 private:
  static dandelion::CommitSteps steps() {
    dandelion::CommitSteps s{};
    s.validate = true;  // (renewals: the reads whose leases end before the commit timestamp)
    s.replicate = true;
    s.report_after_unlock = true;
    return s;
  }

  std::map<std::string, Lease> take(uint64_t txid) {
    auto it = held_.find(txid);
    if (it == held_.end()) return {};
    std::map<std::string, Lease> out = std::move(it->second);
    held_.erase(it);
    return out;
  }

  // At the key's primary (a direct call when that is this node); nullopt when it did not answer.
  Task<std::optional<LeaseRead>> read_at_primary(const LockRead& request) {
    const uint16_t primary = cluster::primary_of(env_.ctx, request.key);
    ++(primary == env_.ctx.self() ? env_.counters.local_reads : env_.counters.remote_reads);
    if (primary == env_.ctx.self()) co_return as_primary(request.key);
    auto conn = env_.ctx.peer(primary);
    if (!conn) co_return std::nullopt;
    const std::string payload = request.encode();
    rpc::Response resp = co_await env_.ctx.rpc().call(*conn, env_.msgs.at(kLeaseRead), rpc::as_bytes_of(payload));
    if (resp.status != Code::kOk) co_return std::nullopt;
    co_return Reply::decode(resp.payload);
  }

  // The read at this node as the key's primary; nullopt unless it still served as the primary when it was done.
  std::optional<LeaseRead> as_primary(std::string_view key) {
    if (!env_.ctx.membership().in_sync()) return std::nullopt;
    LeaseRead r = leases_->read(env_.ctx, key);
    if (!cluster::serves_as_primary(env_.ctx, std::chrono::steady_clock::now())) return std::nullopt;
    return r;
  }

  void serve(const rpc::Incoming& in) {
    auto l = LockRead::decode(in.payload);
    if (!l || !cluster::is_replica_of(env_.ctx.topology(), env_.ctx.self(), l->key))
      return env_.ctx.rpc().respond(in.reply_to(), Code::kInvalidArgument);
    auto r = as_primary(l->key);
    if (!r) return env_.ctx.rpc().respond(in.reply_to(), Code::kUnavailable);
    const std::string out = Reply{std::move(*r)}.encode();
    env_.ctx.rpc().respond(in.reply_to(), Code::kOk, rpc::as_bytes_of(out));
  }

  CcEnv env_;
  std::shared_ptr<LeaseTable> leases_;
  dandelion::Dandelion commit_;
  // The leases of this worker's running transactions' reads, by transaction (dropped at commit or abort).
  std::map<uint64_t, std::map<std::string, Lease>> held_;
};

}  // namespace

std::unique_ptr<ConcurrencyControl> make_sundial(const CcEnv& env) {
  return std::make_unique<Sundial>(env, LeaseTable::of(env.ctx));
}

}  // namespace rdx::txn::sundial
