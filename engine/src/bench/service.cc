#include "bench/service.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "checker/history_io.h"
#include "common/histogram.h"
#include "rpc/codec.h"
#include "workload/bulk.h"
#include "workload/workload.h"

namespace rdx::bench {

using rpc::Task;
using Clock = std::chrono::steady_clock;

namespace {
constexpr size_t kHistoryPageBytes = 48 * 1024;
constexpr size_t kMaxSpec = 4096;

void respond_error(rpc::Rpc& rpc, const rpc::ReplyTo& to, const Status& st) {
  rpc.respond(to, st.code(), rpc::as_bytes_of(st.message()));
}

// Per transaction type of one run.
struct TypeStats {
  uint64_t by_status[5] = {0, 0, 0, 0, 0};  // workload::TxStatus
  Histogram latency;                        // committed attempts, ns
  std::string first_error;
};
}  // namespace

Result<std::unique_ptr<server::Service>> make_bench_service(server::ServiceEnv& env) {
  if (env.txn == nullptr) return std::unique_ptr<server::Service>();
  auto svc = std::make_unique<BenchService>(env.ctx, *env.txn);
  RDX_RETURN_IF_ERROR(svc->start());
  return std::unique_ptr<server::Service>(std::move(svc));
}

Status BenchService::start() {
  auto& rpc = ctx_.rpc();
  RDX_RETURN_IF_ERROR(rpc.on(kBenchLoad, [this](const rpc::Incoming& in) {
    rpc::Reader r(in.payload);
    std::string spec(r.bytes(kMaxSpec));
    auto begin = r.get<uint64_t>(), end = r.get<uint64_t>();
    auto per_txn = r.get<uint32_t>();
    if (!r.done() || begin > end) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
    rpc::spawn(load(in.reply_to(), std::move(spec), begin, end, per_txn));
  }));
  RDX_RETURN_IF_ERROR(rpc.on(kBenchRun, [this](const rpc::Incoming& in) {
    rpc::Reader r(in.payload);
    RunParams p;
    p.spec = std::string(r.bytes(kMaxSpec));
    p.duration_ms = r.get<uint32_t>();
    p.coroutines = r.get<uint32_t>();
    p.seed = r.get<uint64_t>();
    p.record = r.get<uint8_t>() != 0;
    p.switches.local_backup_reads = r.get<int8_t>();
    p.switches.ht_batching = r.get<int8_t>();
    p.switches.validation_off = r.get<int8_t>();
    p.run_id = r.get<uint64_t>();
    if (!r.done() || p.coroutines == 0 || p.coroutines > 4096 || p.duration_ms > 3'600'000)
      return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
    if (running_) return respond_error(ctx_.rpc(), in.reply_to(), error(Code::kBusy, "a run is in progress"));
    rpc::spawn(run(in.reply_to(), std::move(p)));
  }));
  RDX_RETURN_IF_ERROR(rpc.on(kBenchHistory, [this](const rpc::Incoming& in) { serve_history(in); }));
  RDX_RETURN_IF_ERROR(rpc.on(kBenchProgress, [this](const rpc::Incoming& in) { serve_progress(in); }));
  return rpc.on(kBenchCheck, [this](const rpc::Incoming& in) {
    rpc::Reader r(in.payload);
    std::string spec(r.bytes(kMaxSpec));
    workload::Ledger ledger;
    ledger.balance_delta = r.get<int64_t>();
    ledger.unknown_down = r.get<int64_t>();
    ledger.unknown_up = r.get<int64_t>();
    ledger.starts_at_load = r.get<uint8_t>() != 0;
    if (!r.done()) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
    rpc::spawn(check(in.reply_to(), std::move(spec), ledger));
  });
}

Task<void> BenchService::load(rpc::ReplyTo to, std::string spec, uint64_t begin, uint64_t end, uint32_t per_txn) {
  auto w = workload::make_workload(spec);
  if (!w) co_return respond_error(ctx_.rpc(), to, w.status());
  workload::LoadOptions opts;
  opts.keys_per_txn = per_txn;
  auto res = co_await workload::load_units(txn_, *w.value(), begin, std::min(end, w.value()->load_units()), opts);
  if (!res) co_return respond_error(ctx_.rpc(), to, res.status());
  rpc::Writer out;
  out.put(res->records).put(res->retries);
  ctx_.rpc().respond(to, Code::kOk, out.span());
}

Task<void> BenchService::run(rpc::ReplyTo to, RunParams p) {
  auto made = workload::make_workload(p.spec);
  if (!made) co_return respond_error(ctx_.rpc(), to, made.status());
  std::unique_ptr<workload::Workload> w = std::move(made.value());
  running_ = true;
  run_id_ = p.run_id;
  run_committed_ = 0;
  const txn::TxnOptions saved = txn_.options();
  txn::TxnOptions cfg = saved;
  if (p.switches.local_backup_reads >= 0) cfg.local_backup_reads = p.switches.local_backup_reads != 0;
  if (p.switches.ht_batching >= 0) cfg.ht_batching = p.switches.ht_batching != 0;
  cfg.validation_off = p.switches.validation_off != 0;
  cfg.record_history = p.record;
  txn_.set_options(cfg);
  (void)txn_.take_history();
  txn_.reset_counters();
  ctx_.local_reads().reset_stats();
  const uint64_t served_before = ctx_.rpc().endpoint().stats().onesided_served;

  std::vector<TypeStats> stats(w->txn_types().size());
  workload::Ledger ledger;
  const auto end = Clock::now() + std::chrono::milliseconds(p.duration_ms);
  std::vector<Task<int>> loops;
  for (uint32_t i = 0; i < p.coroutines; ++i) {
    uint64_t seed = p.seed ^ (uint64_t{ctx_.self()} << 40) ^ (uint64_t{ctx_.worker_index()} << 32) ^ i;
    loops.push_back([](const workload::Workload& wl, txn::TxnService& svc, std::vector<TypeStats>& st,
                       workload::Ledger& lg, uint64_t& committed, uint64_t sd, Clock::time_point until) -> Task<int> {
      workload::Rng rng(sd);
      while (Clock::now() < until) {
        auto t0 = Clock::now();
        workload::TxOutcome o = co_await wl.run_one(svc, rng, lg);
        TypeStats& ts = st[o.type];
        ++ts.by_status[static_cast<int>(o.status)];
        if (o.status == workload::TxStatus::kCommitted) {
          ts.latency.record(static_cast<uint64_t>(std::chrono::nanoseconds(Clock::now() - t0).count()));
          ++committed;
        }
        if (o.status == workload::TxStatus::kDataError && ts.first_error.empty()) ts.first_error = o.error;
      }
      co_return 0;
    }(*w, txn_, stats, ledger, run_committed_, seed, end));
  }
  co_await rpc::when_all(std::move(loops));

  txn_.set_options(saved);
  history_ = txn_.take_history();
  running_ = false;
  const txn::TxnCounters& ts = txn_.counters();
  const cluster::LocalReadStats& rs = ctx_.local_reads().stats();
  rpc::Writer out;
  out.put(ledger.balance_delta).put(ledger.unknown_down).put(ledger.unknown_up);
  out.put(static_cast<uint64_t>(history_.size()));
  out.put(ts.local_reads).put(ts.remote_reads).put(ts.local_backup_reads).put(rs.batches).put(rs.batched_reads);
  out.put(ts.read_only_commits).put(ts.lock_waits).put(ts.onesided_reads);
  out.put(ctx_.rpc().endpoint().stats().onesided_served - served_before);
  out.put(static_cast<uint32_t>(stats.size()));
  for (size_t i = 0; i < stats.size(); ++i) {
    out.bytes(w->txn_types()[i]);
    for (uint64_t c : stats[i].by_status) out.put(c);
    out.bytes(stats[i].first_error.substr(0, 512));
    uint32_t nz = 0;
    for (int b = 0; b < Histogram::kBuckets; ++b) nz += stats[i].latency.bucket_count(b) != 0;
    out.put(nz);
    for (int b = 0; b < Histogram::kBuckets; ++b)
      if (uint64_t c = stats[i].latency.bucket_count(b); c != 0) out.put(static_cast<uint16_t>(b)).put(c);
  }
  ctx_.rpc().respond(to, Code::kOk, out.span());
}

void BenchService::serve_history(const rpc::Incoming& in) {
  rpc::Reader r(in.payload);
  auto from = r.get<uint64_t>();
  if (!r.done() || from > history_.size()) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  std::string lines;
  uint32_t count = 0;
  for (size_t i = from; i < history_.size() && lines.size() < kHistoryPageBytes; ++i, ++count) {
    checker::append_record_json(history_[i], lines);
    lines.push_back('\n');
  }
  rpc::Writer out;
  out.put(static_cast<uint64_t>(history_.size())).put(count).bytes(lines);
  ctx_.rpc().respond(in.reply_to(), Code::kOk, out.span());
}

void BenchService::serve_progress(const rpc::Incoming& in) {
  rpc::Reader r(in.payload);
  auto id = r.get<uint64_t>();
  if (!r.done()) return ctx_.rpc().respond(in.reply_to(), Code::kInvalidArgument);
  const bool ours = id != 0 && id == run_id_;
  rpc::Writer out;
  out.put(static_cast<uint8_t>(!ours ? 0 : running_ ? 1 : 2)).put(ours ? run_committed_ : uint64_t{0});
  ctx_.rpc().respond(in.reply_to(), Code::kOk, out.span());
}

Task<void> BenchService::check(rpc::ReplyTo to, std::string spec, workload::Ledger merged) {
  auto w = workload::make_workload(spec);
  if (!w) co_return respond_error(ctx_.rpc(), to, w.status());
  workload::InvariantReport rep = co_await w.value()->check(txn_, merged);
  rpc::Writer out;
  out.put(static_cast<uint8_t>(rep.checked)).put(static_cast<uint8_t>(rep.ok)).bytes(rep.summary);
  out.put(static_cast<uint32_t>(std::min<size_t>(rep.problems.size(), 20)));
  for (size_t i = 0; i < rep.problems.size() && i < 20; ++i) out.bytes(rep.problems[i].substr(0, 512));
  ctx_.rpc().respond(to, Code::kOk, out.span());
}

}  // namespace rdx::bench
