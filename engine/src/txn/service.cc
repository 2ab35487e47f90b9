#include "txn/service.h"

#include <time.h>

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

int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The transaction context (Dandelion's TxCache): reads executed, writes buffered, expectations kept for commit.
class Tx final : public Transaction {
 public:
  Tx(TxnServiceImpl& svc, uint64_t id, const DeclaredKeys* declared) : svc_(svc) {
    s_.id = id;
    s_.start_ns = realtime_ns();
    s_.t0 = Clock::now();
    s_.declared = declared;
  }
  ~Tx() override {
    if (!done_) abort();
  }

  Task<Read> get(std::string key) override {
    if (auto w = s_.writes.find(key); w != s_.writes.end()) {  // read your own write
      Read r;
      if (!w->second) {
        r.status = Code::kNotFound;
      } else {
        r.value = *w->second;
      }
      co_return r;
    }
    if (auto it = s_.reads.find(key); it != s_.reads.end()) co_return it->second;  // repeatable within the txn
    Read r = co_await svc_.read(s_, key);
    if (r.status == Code::kOk || r.status == Code::kNotFound) {
      s_.reads.emplace(std::move(key), r);
    } else if (r.status == Code::kAborted) {
      s_.conflicted = true;
    } else {
      s_.failed = true;
    }
    co_return r;
  }
  void put(std::string key, std::string value) override { s_.writes[std::move(key)] = std::move(value); }
  void remove(std::string key) override { s_.writes[std::move(key)] = std::nullopt; }
  void expect(std::string key, uint64_t version) override { s_.expects[std::move(key)] = version; }
  Task<Outcome> commit() override {
    done_ = true;
    co_return co_await svc_.commit(s_);
  }
  void abort() override {
    if (done_) return;
    done_ = true;
    svc_.abort(s_);
  }
  void set_type(std::string type) override { s_.type = std::move(type); }
  uint64_t committed_version(const std::string& key) const override {
    if (s_.outcome_unknown) return 0;
    auto it = s_.write_versions.find(key);
    return it == s_.write_versions.end() ? 0 : it->second;
  }
  bool outcome_unknown() const override { return s_.outcome_unknown; }

 private:
  TxnServiceImpl& svc_;
  TxState s_;
  bool done_ = false;
};

TxnServiceImpl::TxnServiceImpl(cluster::WorkerContext& ctx, cluster::ReplicaLog& log, const CcEntry& cc,
                               Primitives primitives, TxnOptions options)
    : ctx_(ctx),
      log_(log),
      cc_entry_(cc),
      options_(options),
      reads_(ctx, counters_, options_, primitives.onesided_for(Phase::kRead)) {
  cc_ = cc.make(CcEnv{ctx, log, reads_, cc.msgs, std::move(primitives), counters_, options_, [this](TxRecord r) {
                        if (options_.record_history) history_.push_back(std::move(r));
                      }});
  ctx_.local_reads().set_batching(options_.ht_batching);
}

TxnServiceImpl::~TxnServiceImpl() = default;

Status TxnServiceImpl::start() {
  RDX_RETURN_IF_ERROR(reads_.start());
  return cc_->start();
}

void TxnServiceImpl::set_options(const TxnOptions& o) {
  options_ = o;
  ctx_.local_reads().set_batching(o.ht_batching);
}

std::unique_ptr<Transaction> TxnServiceImpl::begin(const DeclaredKeys* declared) {
  return std::make_unique<Tx>(*this, ctx_.next_writer_id(), declared);
}

Task<Read> TxnServiceImpl::read(TxState& tx, std::string key) { return cc_->read(tx, key); }

Task<Outcome> TxnServiceImpl::commit(TxState& tx) {
  Outcome o = tx.failed ? Outcome::kUnavailable : Outcome::kAborted;
  if (tx.failed || tx.conflicted) {
    cc_->abort(tx);
  } else {
    o = co_await cc_->commit(tx);
  }
  record(tx, o == Outcome::kCommitted);
  co_return o;
}

// Given up by its user (nothing applied).
void TxnServiceImpl::abort(TxState& tx) {
  cc_->abort(tx);
  record(tx, false);
}

void TxnServiceImpl::record(const TxState& tx, bool committed) {
  if (!options_.record_history) return;
  TxRecord r;
  r.id = tx.id;
  r.type = tx.type;
  r.start_ns = tx.start_ns;
  r.end_ns = realtime_ns();
  r.committed = committed;
  r.unknown = tx.outcome_unknown;  // (set by commit only with kUnavailable)
  for (const auto& [k, rd] : tx.reads) r.reads.push_back({k, rd.status == Code::kOk ? rd.version : 0});
  for (const auto& [k, v] : tx.expects)
    if (tx.reads.count(k) == 0) r.reads.push_back({k, v});
  for (const auto& [k, val] : tx.writes) {
    if (r.committed) {
      r.writes.push_back({k, tx.write_versions.at(k), !val.has_value()});  // (every written key has its version)
    } else if (r.unknown) {
      if (auto v = tx.write_versions.find(k); v != tx.write_versions.end())
        r.writes.push_back({k, v->second, !val.has_value()});  // the keys whose lock answered
    }
  }
  history_.push_back(std::move(r));
}

}  // namespace rdx::txn
