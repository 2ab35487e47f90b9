#include "bench/txn_mode.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "bench/messages.h"
#include "bench/progress.h"
#include "checker/checker.h"
#include "checker/history_io.h"
#include "client/client.h"
#include "common/histogram.h"
#include "rpc/codec.h"
#include "workload/workload.h"

namespace rdx::bench {
namespace {

using rpc::Task;
using Clock = std::chrono::steady_clock;

const char* kStatusNames[] = {"committed", "aborted", "unavailable", "rolled_back", "data_errors"};

struct TypeResult {
  uint64_t by_status[5] = {0, 0, 0, 0, 0};
  Histogram latency;
  std::string first_error;
};

struct RunResult {
  int64_t ledger = 0, ledger_unknown_down = 0, ledger_unknown_up = 0;
  uint64_t history = 0;
  uint64_t local_reads = 0, remote_reads = 0, local_backup_reads = 0, ht_batches = 0, ht_batched_reads = 0;
  uint64_t read_only_commits = 0;  // committed with dnl-ro
  uint64_t lock_waits = 0;         // waitdie: reads that waited for a younger holder
  uint64_t onesided_reads = 0;     // execution reads a one-sided READ answered
  uint64_t onesided_emulated = 0;  // one-sided ops the workers' transports executed for peers (tcp)
  std::map<std::string, TypeResult> types;
};

int8_t tri(const std::string& v) { return v == "on" ? 1 : v == "off" ? 0 : -1; }

bool decode_run(std::string_view payload, RunResult& r) {
  rpc::Reader rd(payload);
  r.ledger += rd.get<int64_t>();
  r.ledger_unknown_down += rd.get<int64_t>();
  r.ledger_unknown_up += rd.get<int64_t>();
  r.history += rd.get<uint64_t>();
  r.local_reads += rd.get<uint64_t>();
  r.remote_reads += rd.get<uint64_t>();
  r.local_backup_reads += rd.get<uint64_t>();
  r.ht_batches += rd.get<uint64_t>();
  r.ht_batched_reads += rd.get<uint64_t>();
  r.read_only_commits += rd.get<uint64_t>();
  r.lock_waits += rd.get<uint64_t>();
  r.onesided_reads += rd.get<uint64_t>();
  r.onesided_emulated += rd.get<uint64_t>();
  auto ntypes = rd.get<uint32_t>();
  for (uint32_t i = 0; i < ntypes && rd.ok(); ++i) {
    TypeResult& t = r.types[std::string(rd.bytes(256))];
    for (uint64_t& c : t.by_status) c += rd.get<uint64_t>();
    std::string err(rd.bytes(512));
    if (t.first_error.empty()) t.first_error = err;
    auto nz = rd.get<uint32_t>();
    for (uint32_t k = 0; k < nz && rd.ok(); ++k) {
      auto b = rd.get<uint16_t>();
      auto c = rd.get<uint64_t>();
      if (b >= Histogram::kBuckets) return false;
      t.latency.add_bucket(b, c);
    }
  }
  return rd.done();
}

// Drives every coordinating (node, worker): one client thread per worker index, one connection per node.
class Driver {
 public:
  Driver(const TxnOptions& o, const cluster::Topology& topo, client::ClientTransport& ct)
      : o_(o), topo_(topo), ct_(ct) {
    for (const auto& n : topo.nodes) {
      if (n.role != cluster::Role::kData) continue;
      if (!o.nodes.empty() && std::find(o.nodes.begin(), o.nodes.end(), n.name) == o.nodes.end()) continue;
      nodes_.push_back(n.id);
    }
  }
  const std::vector<uint16_t>& nodes() const { return nodes_; }

  // Runs `per_target(client, node, worker)` for every coordinating (node, worker) concurrently; false on failure.
  template <typename F>
  bool each(F per_target) {
    std::atomic<bool> ok{true};
    std::vector<std::thread> threads;
    for (uint16_t w = 0; w < topo_.workers; ++w) {
      threads.emplace_back([&, w] {
        auto c = client::Client::create(ct_, w);
        if (!c) {
          spdlog::error("client {}: {}", w, c.status().to_string());
          ok = false;
          return;
        }
        auto st =
            c.value()->connect(std::chrono::milliseconds(static_cast<int64_t>(o_.connect_timeout_s * 1000)), &nodes_);
        if (!st.is_ok()) {
          spdlog::error("cannot reach the cluster (client thread {}): {}", w, st.to_string());
          ok = false;
          return;
        }
        int active = static_cast<int>(nodes_.size());
        for (uint16_t n : nodes_)
          rpc::spawn([](client::Client& cl, F& fn, uint16_t node, uint16_t worker, int& act,
                        std::atomic<bool>& good) -> Task<void> {
            bool r = co_await fn(cl, node, worker);
            if (!r) good = false;
            --act;
          }(*c.value(), per_target, n, w, active, ok));
        while (active > 0) c.value()->run_once();
      });
    }
    for (auto& t : threads) t.join();
    return ok;
  }

 private:
  const TxnOptions& o_;
  const cluster::Topology& topo_;
  client::ClientTransport& ct_;
  std::vector<uint16_t> nodes_;
};

Task<rpc::Response> call(client::Client& c, uint16_t node, rpc::MsgType type, std::string payload) {
  auto conn = c.connection(node);
  if (!conn) co_return rpc::Response{Code::kUnavailable, "not connected"};
  co_return co_await c.rpc().call(*conn, type, rpc::as_bytes_of(payload));
}

nlohmann::json latency_us(const Histogram& h) {
  return {{"p50_us", h.quantile(0.5) / 1e3},
          {"p99_us", h.quantile(0.99) / 1e3},
          {"p999_us", h.quantile(0.999) / 1e3},
          {"count", h.count()}};
}

// The live committed count of a run (kBenchRun blocks until its end): client threads of their own (indices
// workers..2*workers-1 of the driver's transport, so they never clash with the driver's) poll kBenchProgress on
// every coordinating (node, worker) each `period`.
class RunPoller {
 public:
  RunPoller(client::ClientTransport& ct, std::vector<uint16_t> nodes, uint16_t workers, uint64_t run_id,
            double period_s, double connect_timeout_s)
      : ct_(ct),
        nodes_(std::move(nodes)),
        workers_(workers),
        run_id_(run_id),
        period_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period_s))),
        connect_timeout_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(connect_timeout_s))),
        counts_(std::make_unique<std::atomic<uint64_t>[]>(nodes_.size() * workers)) {
    for (uint16_t w = 0; w < workers_; ++w) threads_.emplace_back([this, w] { loop(w); });
  }
  ~RunPoller() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  uint64_t committed() const {
    uint64_t sum = 0;
    for (size_t i = 0; i < nodes_.size() * workers_; ++i) sum += counts_[i].load(std::memory_order_relaxed);
    return sum;
  }

 private:
  static Task<void> poll_one(client::Client& c, uint16_t node, uint64_t run_id, std::atomic<uint64_t>& count,
                             int& inflight) {
    rpc::Writer wr;
    wr.put(run_id);
    rpc::Response r = co_await call(c, node, kBenchProgress, wr.data());
    if (r.status == Code::kOk) {
      rpc::Reader rd(r.payload);
      auto state = rd.get<uint8_t>();
      auto committed = rd.get<uint64_t>();
      if (rd.done() && state != 0) count.store(committed, std::memory_order_relaxed);
    }
    --inflight;
  }

  void loop(uint16_t w) {
    auto made = client::Client::create(ct_, static_cast<uint16_t>(workers_ + w));
    if (!made) {
      spdlog::warn("progress client {}: {}", w, made.status().to_string());
      return;
    }
    client::Client& c = *made.value();
    // Short connect attempts, so a stop is noticed soon.
    const auto give_up = Clock::now() + connect_timeout_;
    for (;;) {
      if (stop_) return;
      if (c.connect(std::chrono::milliseconds(200), &nodes_).is_ok()) break;
      if (Clock::now() > give_up) {
        spdlog::warn("progress client {}: cannot reach every coordinating node; progress counts stay partial", w);
        break;
      }
    }
    int inflight = 0;
    auto next = Clock::now();
    // Outstanding polls are waited for before the client goes away (they end with their response or the
    // connection's loss).
    while (!stop_ || inflight > 0) {
      if (!stop_ && inflight == 0 && Clock::now() >= next) {
        next = Clock::now() + period_;
        for (size_t i = 0; i < nodes_.size(); ++i) {
          ++inflight;
          rpc::spawn(poll_one(c, nodes_[i], run_id_, counts_[i * workers_ + w], inflight));
        }
      }
      c.run_once(std::chrono::microseconds(2000));
    }
  }

  client::ClientTransport& ct_;
  const std::vector<uint16_t> nodes_;
  const uint16_t workers_;
  const uint64_t run_id_;
  const Clock::duration period_, connect_timeout_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

uint64_t random_run_id() {
  std::random_device rd;
  uint64_t id = 0;
  while (id == 0) id = (uint64_t{rd()} << 32) ^ rd();
  return id;
}

std::string first_violation(const checker::CheckReport& report) {
  if (report.violations.empty()) return "";
  const checker::Violation& v = report.violations.front();
  return fmt::format("{}: {}", checker::anomaly_name(v.kind), v.message);
}

}  // namespace

int run_txn(const TxnOptions& o, Summary& sum) {
  sum.mode = "txn";
  sum.unit = "tx/s";
  sum.stage = o.load ? "load" : "run";
  sum.invariant = Summary::Invariant{false, true, "not checked: the invocation ended before the check"};
  auto wl = workload::make_workload(o.workload);
  if (!wl) {
    spdlog::error("rdx-bench: {}\n{}", wl.status().message(), workload::workload_help());
    return 2;
  }
  const workload::Workload& w = *wl.value();
  auto topo = cluster::load_topology(o.config);
  if (!topo) {
    spdlog::error("rdx-bench: {}", topo.status().message());
    return 2;
  }
  // What the progress lines count (declared before `progress`, whose thread reads them until it ends).
  std::atomic<uint64_t> records{0}, fetched{0};
  Progress progress(o.progress_interval_s);
  // With progress lines, a second set of client threads polls the runs' committed counts (RunPoller).
  const bool poll = progress.on() && !o.no_run;
  const auto client_threads = static_cast<uint16_t>(topo->workers * (poll ? 2 : 1));
  // One call covers a whole run, or a worker's whole slice of the load: a load of millions of records takes
  // minutes (more without network batching), so it gets an hour.
  const auto call_timeout = std::chrono::seconds(static_cast<int64_t>(o.duration_s) + 120 + (o.load ? 3600 : 0));
  auto ct = client::ClientTransport::create(topo.value(), client_threads, call_timeout);
  if (!ct) {
    spdlog::error("rdx-bench: {}", ct.status().to_string());
    return 2;
  }
  Driver d(o, topo.value(), *ct.value());
  if (d.nodes().empty()) {
    spdlog::error("rdx-bench: no coordinating data node matches --nodes");
    return 2;
  }
  const uint64_t run_id = random_run_id();
  std::unique_ptr<RunPoller> poller;
  if (poll) {  // from the start: its connections are up when the run begins
    poller = std::make_unique<RunPoller>(*ct.value(), d.nodes(), static_cast<uint16_t>(topo->workers), run_id,
                                         std::max(0.1, o.progress_interval_s / 2), o.connect_timeout_s);
  }
  const size_t targets = d.nodes().size() * topo->workers;
  std::mutex mu;
  nlohmann::json out;
  out["workload"] = {{"spec", o.workload}, {"name", w.name()}};
  for (const auto& [k, v] : w.params()) out["workload"]["params"][k] = v;
  out["config"] = {{"txn_protocol", topo->txn_protocol}, {"nodes", d.nodes().size()},
                   {"workers", topo->workers},           {"coroutines_per_worker", o.coroutines},
                   {"duration_s", o.duration_s},         {"local_backup_reads", o.local_backup_reads},
                   {"ht_batching", o.ht_batching},       {"nw_batching", topo->batching},
                   {"transport", topo->transport}};

  if (o.load) {
    auto t0 = Clock::now();
    const uint64_t units = w.load_units();
    progress.begin("loading", 0, [&records] { return records.load(); });
    bool ok = d.each([&](client::Client& c, uint16_t node, uint16_t worker) -> Task<bool> {
      size_t idx = (std::find(d.nodes().begin(), d.nodes().end(), node) - d.nodes().begin()) * topo->workers + worker;
      uint64_t begin = units * idx / targets, end = units * (idx + 1) / targets;
      rpc::Writer wr;
      wr.bytes(o.workload).put(begin).put(end).put(static_cast<uint32_t>(o.load_keys_per_txn));
      rpc::Response r = co_await call(c, node, kBenchLoad, wr.data());
      if (r.status != Code::kOk) {
        spdlog::error("load on node {} worker {}: {} {}", node, worker, code_name(r.status), r.payload);
        co_return false;
      }
      rpc::Reader rd(r.payload);
      records += rd.get<uint64_t>();
      co_return true;
    });
    progress.end();
    if (!ok) return 1;
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    fmt::print("loaded {} units ({} records) in {:.1f} s\n", units, records.load(), secs);
    out["load"] = {{"units", units}, {"records", records.load()}, {"seconds", secs}};
    sum.load = Summary::Load{records.load(), secs};
  }

  RunResult total;
  int rc = 0;
  if (!o.no_run) {
    sum.stage = "run";
    progress.begin("running", o.duration_s, [&poller] { return poller->committed(); });
    bool ok = d.each([&](client::Client& c, uint16_t node, uint16_t worker) -> Task<bool> {
      rpc::Writer wr;
      wr.bytes(o.workload).put(static_cast<uint32_t>(o.duration_s * 1000)).put(static_cast<uint32_t>(o.coroutines));
      wr.put(static_cast<uint64_t>(o.seed)).put(static_cast<uint8_t>(!o.history_path.empty()));
      wr.put(tri(o.local_backup_reads)).put(tri(o.ht_batching)).put(static_cast<int8_t>(o.validation_off ? 1 : 0));
      wr.put(run_id);
      rpc::Response r = co_await call(c, node, kBenchRun, wr.data());
      if (r.status != Code::kOk) {
        spdlog::error("run on node {} worker {}: {} {}", node, worker, code_name(r.status), r.payload);
        co_return false;
      }
      std::lock_guard<std::mutex> lk(mu);
      if (!decode_run(r.payload, total)) {
        spdlog::error("run on node {} worker {}: malformed result", node, worker);
        co_return false;
      }
      co_return true;
    });
    progress.end();
    poller.reset();
    if (!ok) return 1;

    uint64_t committed = 0, aborted = 0, all = 0, unavailable = 0, data_errors = 0;
    Histogram overall;
    fmt::print("rdx-bench {} on {} ({}): {} nodes x {} workers x {} coroutines, {:.1f} s\n", w.name(),
               topo->txn_protocol, topo->transport, d.nodes().size(), topo->workers, o.coroutines, o.duration_s);
    for (auto& [type, t] : total.types) {
      uint64_t attempts = 0;
      for (uint64_t c : t.by_status) attempts += c;
      committed += t.by_status[0];
      aborted += t.by_status[1];
      unavailable += t.by_status[2];
      data_errors += t.by_status[4];
      all += attempts;
      overall.merge(t.latency);
      double abort_rate = attempts ? static_cast<double>(t.by_status[1]) / static_cast<double>(attempts) : 0;
      fmt::print("  {:<22} {:>9} committed {:>7.0f} tx/s  abort {:5.1f}%  p50 {:7.1f} us  p99 {:8.1f} us\n", type,
                 t.by_status[0], static_cast<double>(t.by_status[0]) / o.duration_s, 100 * abort_rate,
                 t.latency.quantile(0.5) / 1e3, t.latency.quantile(0.99) / 1e3);
      nlohmann::json j = latency_us(t.latency);
      for (int s = 0; s < 5; ++s) j[kStatusNames[s]] = t.by_status[s];
      j["abort_rate"] = abort_rate;
      if (!t.first_error.empty()) j["first_error"] = t.first_error;
      out["types"][type] = j;
      if (!t.first_error.empty()) spdlog::error("{}: data error: {}", type, t.first_error);
    }
    double tput = static_cast<double>(committed) / o.duration_s;
    double abort_rate = all ? static_cast<double>(aborted) / static_cast<double>(committed + aborted) : 0;
    fmt::print("  total: {:.0f} committed tx/s, abort rate {:.1f}%, p50 {:.1f} us, p99 {:.1f} us\n", tput,
               100 * abort_rate, overall.quantile(0.5) / 1e3, overall.quantile(0.99) / 1e3);
    fmt::print(
        "  reads: {} local ({} from a local backup), {} remote ({} answered one-sided); hashtable batches {} (avg "
        "{:.1f} "
        "reads)\n",
        total.local_reads, total.local_backup_reads, total.remote_reads, total.onesided_reads, total.ht_batches,
        total.ht_batches ? static_cast<double>(total.ht_batched_reads) / static_cast<double>(total.ht_batches) : 0);
    fmt::print("  read-only transactions committed with dnl-ro: {}; reads that waited for a lock (waitdie): {}\n",
               total.read_only_commits, total.lock_waits);
    out["committed_tx_s"] = tput;
    out["abort_rate"] = abort_rate;
    out["latency"] = latency_us(overall);
    out["reads"] = {{"local", total.local_reads},     {"local_backup", total.local_backup_reads},
                    {"remote", total.remote_reads},   {"onesided", total.onesided_reads},
                    {"ht_batches", total.ht_batches}, {"ht_batched_reads", total.ht_batched_reads}};
    out["read_only_commits"] = total.read_only_commits;
    out["lock_waits"] = total.lock_waits;
    out["data_errors"] = data_errors;
    out["onesided_emulated"] = total.onesided_emulated;
    if (data_errors > 0) rc = 1;
    sum.duration_s = o.duration_s;
    sum.throughput = tput;
    sum.p50_us = static_cast<double>(overall.quantile(0.5)) / 1e3;
    sum.p99_us = static_cast<double>(overall.quantile(0.99)) / 1e3;
    sum.p999_us = static_cast<double>(overall.quantile(0.999)) / 1e3;
    sum.committed = committed;
    sum.aborted = aborted;
    sum.abort_rate = abort_rate;
    sum.errors = unavailable + data_errors;
    sum.emulated_onesided_ops = total.onesided_emulated;
    sum.ledger = total.ledger;
    sum.ledger_unknown = {total.ledger_unknown_down, total.ledger_unknown_up};
  }

  progress.begin("checking", 0, [&fetched] { return fetched.load(); });  // ops: history records fetched
  if (!o.history_path.empty()) {
    std::vector<txn::TxRecord> history;
    bool got = d.each([&](client::Client& c, uint16_t node, uint16_t) -> Task<bool> {
      uint64_t from = 0;
      for (;;) {
        rpc::Writer wr;
        wr.put(from);
        rpc::Response r = co_await call(c, node, kBenchHistory, wr.data());
        if (r.status != Code::kOk) {
          spdlog::error("history of node {}: {} {}", node, code_name(r.status), r.payload);
          co_return false;
        }
        rpc::Reader rd(r.payload);
        auto total_n = rd.get<uint64_t>();
        auto count = rd.get<uint32_t>();
        std::string lines(rd.bytes());
        if (!rd.done()) {
          spdlog::error("history of node {}: malformed page", node);
          co_return false;
        }
        std::istringstream in("{\"rdx_history\":1}\n" + lines);  // pages carry records only
        auto recs = checker::read_history(in, fmt::format("node {} history", node));
        if (!recs) {
          spdlog::error("{}", recs.status().message());
          co_return false;
        }
        {
          std::lock_guard<std::mutex> lk(mu);
          for (auto& rec : recs.value()) history.push_back(std::move(rec));
        }
        fetched += count;
        from += count;
        if (from >= total_n || count == 0) break;
      }
      co_return true;
    });
    if (!got) return 1;
    if (auto st = checker::write_history_file(o.history_path, history); !st.is_ok()) {
      spdlog::error("{}", st.to_string());
      return 2;
    }
    checker::CheckOptions copts;
    auto report = checker::check_history(history, copts);
    if (!report) {
      spdlog::error("checker: {}", report.status().message());
      return 1;
    }
    fmt::print("{}", checker::format_report(report.value()));
    out["checker"] = {{"ok", report->ok()},
                      {"violations", report->total()},
                      {"transactions", history.size()},
                      {"committed", report->stats.committed},
                      {"history", o.history_path}};
    sum.checker = Summary::Checker{"strict-serializability", report->ok(), history.size(), report->total(),
                                   first_violation(report.value())};
    if (!report->ok()) {
      spdlog::error("checker: the history is not strictly serializable: {} violations, first {}", report->total(),
                    sum.checker->anomaly);
      rc = 4;
    }
  }

  // The invariant check runs on one worker once every run has ended. Checks relative to the loaded state (SmallBank's
  // total) report "not checked" unless this invocation loaded the data or --ledger-base says what earlier runs on it
  // committed.
  const int64_t delta = o.ledger_base.value_or(0) + total.ledger;
  bool invariant_done = false;
  d.each([&](client::Client& c, uint16_t node, uint16_t worker) -> Task<bool> {
    if (node != d.nodes().front() || worker != 0) co_return true;
    rpc::Writer wr;
    wr.bytes(o.workload).put(delta).put(total.ledger_unknown_down).put(total.ledger_unknown_up);
    wr.put(static_cast<uint8_t>(o.load || o.ledger_base.has_value()));
    rpc::Response r = co_await call(c, node, kBenchCheck, wr.data());
    if (r.status != Code::kOk) {
      spdlog::error("invariant check: {} {}", code_name(r.status), r.payload);
      sum.invariant =
          Summary::Invariant{false, false, fmt::format("check failed: {} {}", code_name(r.status), r.payload)};
      co_return false;
    }
    rpc::Reader rd(r.payload);
    bool checked = rd.get<uint8_t>() != 0, good = rd.get<uint8_t>() != 0;
    std::string summary(rd.bytes());
    auto n = rd.get<uint32_t>();
    std::vector<std::string> problems;
    for (uint32_t i = 0; i < n && rd.ok(); ++i) problems.emplace_back(rd.bytes());
    invariant_done = true;
    sum.invariant = Summary::Invariant{checked, !checked || good, summary};
    if (!checked) {
      if (!summary.empty()) fmt::print("invariant: {}\n", summary);
      co_return true;
    }
    fmt::print("invariant: {} ({})\n", good ? "holds" : "VIOLATED", summary);
    for (const auto& p : problems) fmt::print("  {}\n", p);
    out["invariant"] = {{"ok", good}, {"summary", summary}, {"problems", problems}};
    if (!good) {
      spdlog::error("invariant violated: {}{}", summary, problems.empty() ? "" : "; " + problems.front());
      rc = 5;
    }
    co_return true;
  });
  progress.end();
  if (!invariant_done) rc = rc ? rc : 1;
  if (!o.json_path.empty()) std::ofstream(o.json_path) << out.dump(2) << "\n";
  return rc;
}

}  // namespace rdx::bench
