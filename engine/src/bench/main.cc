// rdx-bench: the native load generator.
//  --workload kv (default): YCSB-style single-key operations from this process over the native client library
//    (throughput and latency count completed operations; failed ones are reported as errors):
//    N client threads x M outstanding operations, fixed duration, latency histograms (not sorted samples), JSON
//    output, and an optional read-back of every acknowledged write (no acknowledged write may be lost).
//  --workload smallbank|tatp|ogp|ycsb-a|... : transactions run inside the cluster's workers (bench/txn_mode.h),
//    with history recording and the strict-serializability checker.
// Both modes can write a compact verdict at exit (--summary, bench/summary.h) and progress lines while they work
// (--progress-interval, bench/progress.h); engine/docs/rdx-bench.md describes the flags and formats.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "bench/keygen.h"
#include "bench/kv_history.h"
#include "bench/progress.h"
#include "bench/summary.h"
#include "bench/txn_mode.h"
#include "client/client.h"
#include "common/hash.h"
#include "common/histogram.h"

namespace rdx::bench {
namespace {

using Clock = std::chrono::steady_clock;
using rpc::Task;

struct Options {
  std::string config;
  uint16_t threads = 2;
  uint32_t outstanding = 16;
  double duration_s = 10;
  double warmup_s = 1;
  uint64_t keys = 100000;
  uint32_t value_size = 32;
  double read_ratio = 0.5;
  std::string dist = "uniform";
  double theta = 0.99;
  bool load = false;
  bool no_run = false;  // load only
  bool verify_acked = false;
  std::string save_acked;   // write every acknowledged write (key, version, value hash) here
  std::string verify_from;  // only verify: read back every write saved in this file
  std::string json_path;
  uint64_t seed = 42;
  double connect_timeout_s = 30;
  double progress_interval_s = 0;
  bool read_any = false;  // reads go to every replica of the key's shard in turn (--read-from any)
  std::string history;    // record the load and the run here (rdx-lincheck's format) and check it
  std::string lincheck;   // the checker binary (default: next to rdx-bench, then PATH)
};

struct Acked {
  uint64_t version = 0;
  uint64_t value_hash = 0;
};

struct ThreadState {
  Histogram read_lat, write_lat;
  std::vector<uint64_t> per_second;  // completed operations (any status) per second of the measured run
  uint64_t reads = 0, writes = 0;
  uint64_t loaded = 0;                // keys written by the load
  std::atomic<uint64_t> progress{0};  // operations completed in any stage (progress lines)
  std::map<Code, uint64_t> errors;
  std::unordered_map<uint64_t, Acked> acked;
  std::vector<KvOp> history;
  std::mt19937_64 rng;
  int active = 0;
};

std::string make_value(uint64_t key, std::mt19937_64& rng, uint32_t size) {
  std::string v(size, '\0');
  uint64_t x = rng() ^ key;
  for (uint32_t i = 0; i < size; ++i) {
    if (i % 8 == 0) x = x * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = static_cast<char>('a' + ((x >> ((i % 8) * 8)) & 0xff) % 26);
  }
  return v;
}

Task<void> op_loop(client::Client& c, ThreadState& st, const Options& o, KeyChooser& chooser, Clock::time_point start,
                   Clock::time_point end, uint32_t client) {
  std::bernoulli_distribution is_read(o.read_ratio);
  while (Clock::now() < end) {
    uint64_t k = chooser.next(st.rng);
    bool read = is_read(st.rng);
    auto t0 = Clock::now();
    client::KvResult r;
    std::string value;
    std::optional<KvOp> op;
    if (!o.history.empty()) op = KvOp{client, k, !read, true, false, {}, wall_ns(), 0};
    if (read) {
      r = co_await c.get(KeyChooser::key_name(k), o.read_any);
    } else {
      value = make_value(k, st.rng, o.value_size);
      r = co_await c.put(KeyChooser::key_name(k), value);
    }
    auto t1 = Clock::now();
    if (op) record_kv_op(st.history, std::move(*op), r, value);
    bool ok = r.status == Code::kOk || (read && r.status == Code::kNotFound);
    if (!ok && st.errors[r.status]++ == 0)
      spdlog::warn("first {} error of this thread ({}): {}", code_name(r.status), read ? "get" : "put", r.error);
    if (!ok) continue;  // throughput and latency count completed operations; errors are counted above
    st.progress.fetch_add(1, std::memory_order_relaxed);
    if (!read) {
      Acked& a = st.acked[k];
      if (r.version > a.version) a = Acked{r.version, hash_key(value)};
    }
    if (t0 < start) continue;  // warm-up
    auto sec = static_cast<size_t>(std::chrono::duration_cast<std::chrono::seconds>(t1 - start).count());
    if (st.per_second.size() <= sec) st.per_second.resize(sec + 1);
    ++st.per_second[sec];
    auto ns = static_cast<uint64_t>(std::chrono::nanoseconds(t1 - t0).count());
    if (read) {
      ++st.reads;
      st.read_lat.record(ns);
    } else {
      ++st.writes;
      st.write_lat.record(ns);
    }
  }
  --st.active;
}

Task<void> load_loop(client::Client& c, ThreadState& st, const Options& o, uint64_t to, std::atomic<uint64_t>& next,
                     uint32_t client) {
  for (;;) {
    uint64_t k = next.fetch_add(1);
    if (k >= to) break;
    std::string value = make_value(k, st.rng, o.value_size);
    std::optional<KvOp> op;
    if (!o.history.empty()) op = KvOp{client, k, true, true, false, {}, wall_ns(), 0};
    client::KvResult r = co_await c.put(KeyChooser::key_name(k), value);
    if (op) record_kv_op(st.history, std::move(*op), r, value);
    st.progress.fetch_add(1, std::memory_order_relaxed);
    if (r.status != Code::kOk) {
      if (st.errors[r.status]++ == 0) spdlog::warn("first {} error while loading: {}", code_name(r.status), r.error);
    } else {
      ++st.loaded;
      Acked& a = st.acked[k];
      if (r.version > a.version) a = Acked{r.version, hash_key(value)};
    }
  }
  --st.active;
}

struct VerifyResult {
  uint64_t checked = 0, lost = 0, corrupt = 0, unreadable = 0;
  std::string first;  // the first lost or corrupt write
};

Task<void> verify_loop(client::Client& c, const std::vector<std::pair<uint64_t, Acked>>& items,
                       std::atomic<size_t>& next, VerifyResult& vr, int& active, std::atomic<uint64_t>& done) {
  for (;;) {
    size_t i = next.fetch_add(1);
    if (i >= items.size()) break;
    const auto& [k, want] = items[i];
    client::KvResult r;
    for (int attempt = 0; attempt < 5; ++attempt) {  // transient unavailability (e.g. right after a failure)
      r = co_await c.get(KeyChooser::key_name(k));
      if (r.status == Code::kOk || r.status == Code::kNotFound) break;
    }
    ++vr.checked;
    done.fetch_add(1, std::memory_order_relaxed);
    if (r.status == Code::kNotFound || (r.status == Code::kOk && r.version < want.version)) {
      ++vr.lost;
      std::string what = fmt::format("LOST acknowledged write: key {} acked version {} now {}", KeyChooser::key_name(k),
                                     want.version, r.status == Code::kOk ? std::to_string(r.version) : "missing");
      if (vr.lost <= 10) spdlog::error("{}", what);
      if (vr.first.empty()) vr.first = std::move(what);
    } else if (r.status != Code::kOk) {
      ++vr.unreadable;
    } else if (r.version == want.version && hash_key(r.value) != want.value_hash) {
      ++vr.corrupt;
      if (vr.first.empty())
        vr.first = fmt::format("CORRUPT acknowledged write: key {} version {} reads another value",
                               KeyChooser::key_name(k), want.version);
    }
  }
  --active;
}

// Reads back every acknowledged write; fills out["verify"] and the summary's checker. Returns 0 if every write was
// read back intact.
template <typename Phase>
int verify(const Options& o, const std::unordered_map<uint64_t, Acked>& acked, Phase& phase, nlohmann::json& out,
           Summary& sum) {
  std::vector<std::pair<uint64_t, Acked>> items(acked.begin(), acked.end());
  std::atomic<size_t> next{0};
  std::vector<VerifyResult> vrs(o.threads);
  phase([&](client::Client& c, ThreadState& st, uint16_t t) {
    int active = static_cast<int>(o.outstanding);
    for (uint32_t i = 0; i < o.outstanding; ++i) rpc::spawn(verify_loop(c, items, next, vrs[t], active, st.progress));
    while (active > 0) c.run_once();
  });
  VerifyResult v;
  for (auto& x : vrs) {
    v.checked += x.checked, v.lost += x.lost, v.corrupt += x.corrupt, v.unreadable += x.unreadable;
    if (v.first.empty()) v.first = x.first;
  }
  out["verify"] = {{"acknowledged_keys", items.size()},
                   {"checked", v.checked},
                   {"lost", v.lost},
                   {"corrupt", v.corrupt},
                   {"unreadable", v.unreadable}};
  fmt::print("verify: {} acknowledged keys read back: {} lost, {} corrupt, {} unreadable\n", v.checked, v.lost,
             v.corrupt, v.unreadable);
  const bool ok = v.lost == 0 && v.corrupt == 0 && v.unreadable == 0 && v.checked == items.size();
  if (v.first.empty() && !ok)
    v.first = fmt::format("{} of {} acknowledged writes could not be read back",
                          items.size() - v.checked + v.unreadable, items.size());
  sum.checker = Summary::Checker{"acknowledged-writes", ok, v.checked, v.lost + v.corrupt, v.first};
  if (!ok)
    spdlog::error("verify: {} lost, {} corrupt, {} unreadable; first: {}", v.lost, v.corrupt, v.unreadable, v.first);
  return ok ? 0 : 3;
}

// One line per key: "<key index> <version> <value hash>".
bool save_acked_file(const std::string& path, const std::unordered_map<uint64_t, Acked>& acked) {
  std::ofstream f(path);
  for (const auto& [k, a] : acked) f << k << ' ' << a.version << ' ' << a.value_hash << '\n';
  f.close();
  if (!f) spdlog::error("cannot write {}", path);
  return static_cast<bool>(f);
}

Result<std::unordered_map<uint64_t, Acked>> load_acked_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return error(Code::kInvalidArgument, "cannot read {}", path);
  std::unordered_map<uint64_t, Acked> acked;
  std::string line;
  for (size_t n = 1; std::getline(f, line); ++n) {
    std::istringstream ls(line);
    uint64_t k;
    Acked a;
    if (!(ls >> k >> a.version >> a.value_hash)) return error(Code::kInvalidArgument, "{}:{}: malformed line", path, n);
    acked[k] = a;
  }
  return acked;
}

nlohmann::json latency_json(const Histogram& h) {
  return {{"count", h.count()},
          {"p50_us", h.quantile(0.5) / 1e3},
          {"p99_us", h.quantile(0.99) / 1e3},
          {"p999_us", h.quantile(0.999) / 1e3},
          {"max_us", h.max() / 1e3},
          {"mean_us", h.mean() / 1e3}};
}

// A one-line account of failed operations, e.g. "12 operations failed (unavailable 10, timeout 2)".
std::string describe_errors(const std::map<Code, uint64_t>& errors) {
  uint64_t n = 0;
  std::string by_code;
  for (auto& [c, k] : errors) {
    n += k;
    by_code += fmt::format("{}{} {}", by_code.empty() ? "" : ", ", code_name(c), k);
  }
  return fmt::format("{} operations failed ({})", n, by_code);
}

int run(const Options& o, Summary& sum) {
  sum.mode = "kv";
  sum.unit = "ops/s";
  sum.stage = o.load ? "load" : "run";
  auto topo = cluster::load_topology(o.config);
  if (!topo) {
    spdlog::error("rdx-bench: {}", topo.status().message());
    return 2;
  }
  auto ct = client::ClientTransport::create(topo.value(), o.threads);
  if (!ct) {
    spdlog::error("rdx-bench: {}", ct.status().to_string());
    return 2;
  }
  std::vector<ThreadState> states(o.threads);
  const auto ops_done = [&states] {
    uint64_t n = 0;
    for (auto& st : states) n += st.progress.load(std::memory_order_relaxed);
    return n;
  };
  Progress progress(o.progress_interval_s);  // after `states`: its thread reads them
  std::atomic<int> failed_connect{0};
  nlohmann::json out;
  std::atomic<uint64_t> load_next{0};
  auto phase = [&](auto body) {
    std::vector<std::thread> ts;
    for (uint16_t t = 0; t < o.threads; ++t) {
      ts.emplace_back([&, t] {
        auto c = client::Client::create(*ct.value(), t);
        if (!c) {
          spdlog::error("client {}: {}", t, c.status().to_string());
          failed_connect.fetch_add(1);
          return;
        }
        auto st = c.value()->connect(std::chrono::milliseconds(static_cast<int64_t>(o.connect_timeout_s * 1000)));
        if (!st.is_ok()) {
          spdlog::error("cannot reach the cluster (client thread {}): {}", t, st.to_string());
          failed_connect.fetch_add(1);
          return;
        }
        body(*c.value(), states[t], t);
      });
    }
    for (auto& th : ts) th.join();
  };

  if (!o.verify_from.empty()) {
    sum.stage = "run";
    auto acked = load_acked_file(o.verify_from);
    if (!acked) {
      spdlog::error("rdx-bench: {}", acked.status().message());
      return 2;
    }
    progress.begin("checking", 0, ops_done);
    int rc = verify(o, acked.value(), phase, out, sum);
    progress.end();
    if (failed_connect.load() > 0) return 1;
    if (!o.json_path.empty()) std::ofstream(o.json_path) << out.dump(2) << "\n";
    return rc;
  }

  out["workload"] = {{"kind", "ycsb"},         {"read_ratio", o.read_ratio},
                     {"keys", o.keys},         {"value_size", o.value_size},
                     {"distribution", o.dist}, {"theta", o.theta}};
  out["config"] = {{"threads", o.threads},         {"outstanding", o.outstanding}, {"duration_s", o.duration_s},
                   {"transport", topo->transport}, {"nodes", topo->nodes.size()},  {"shards", topo->shards.size()}};
  // Each phase creates its own endpoints; the transport supports one endpoint per thread index at a time, so
  // phases run one after another with fresh clients.
  if (o.load) {
    auto t0 = Clock::now();
    progress.begin("loading", 0, ops_done);
    phase([&](client::Client& c, ThreadState& st, uint16_t t) {
      st.rng.seed(o.seed * 7919 + t);
      st.active = static_cast<int>(o.outstanding);
      for (uint32_t i = 0; i < o.outstanding; ++i)
        rpc::spawn(load_loop(c, st, o, o.keys, load_next, t * o.outstanding + i));
      while (st.active > 0) c.run_once();
    });
    progress.end();
    if (failed_connect.load() > 0) return 1;
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    uint64_t loaded = 0;
    for (auto& st : states) loaded += st.loaded;
    spdlog::info("loaded {} keys in {:.2f} s ({:.0f} puts/s)", loaded, secs, static_cast<double>(o.keys) / secs);
    sum.load = Summary::Load{loaded, secs};
    out["load"] = {{"keys", o.keys}, {"records", loaded}, {"seconds", secs}};
  }
  std::map<Code, uint64_t> load_errors;
  for (auto& st : states) {
    for (auto& [c, n] : st.errors) load_errors[c] += n;
    st.errors.clear();
  }
  uint64_t nload_errors = 0;
  for (auto& [c, n] : load_errors) nload_errors += n;
  out["load_errors"] = nload_errors;
  if (nload_errors > 0) spdlog::error("load: {}", describe_errors(load_errors));

  uint64_t nerrors = 0;
  if (!o.no_run) {
    sum.stage = "run";
    KeyChooser proto_chooser(o.keys, o.dist == "zipfian", o.theta);
    auto start = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o.warmup_s * 1000));
    auto end = start + std::chrono::milliseconds(static_cast<int64_t>(o.duration_s * 1000));
    auto run_t0 = Clock::now();
    progress.begin("running", o.warmup_s + o.duration_s, ops_done);  // the warm-up is part of the stage
    phase([&](client::Client& c, ThreadState& st, uint16_t t) {
      st.rng.seed(o.seed * 104729 + t);
      KeyChooser chooser = proto_chooser;
      st.active = static_cast<int>(o.outstanding);
      auto s = std::max(start, Clock::now());
      for (uint32_t i = 0; i < o.outstanding; ++i)
        rpc::spawn(op_loop(c, st, o, chooser, s, end, t * o.outstanding + i));
      while (st.active > 0) c.run_once();
    });
    progress.end();
    if (failed_connect.load() > 0) return 1;
    double measured = std::chrono::duration<double>(end - std::max(start, run_t0)).count();

    Histogram reads, writes;
    uint64_t nreads = 0, nwrites = 0;
    std::map<Code, uint64_t> errors;
    std::vector<uint64_t> timeline(static_cast<size_t>(std::ceil(measured)), 0);
    for (auto& st : states) {
      for (size_t i = 0; i < st.per_second.size() && i < timeline.size(); ++i) timeline[i] += st.per_second[i];
      reads.merge(st.read_lat);
      writes.merge(st.write_lat);
      nreads += st.reads;
      nwrites += st.writes;
      for (auto& [c, n] : st.errors) {
        errors[c] += n;
        nerrors += n;
      }
    }
    double tput = static_cast<double>(nreads + nwrites) / measured;

    out["ops"] = nreads + nwrites;
    out["ops_per_second"] = timeline;
    out["throughput_ops_s"] = tput;
    out["read"] = latency_json(reads);
    out["write"] = latency_json(writes);
    Histogram all = reads;
    all.merge(writes);
    out["latency"] = latency_json(all);
    out["errors"] = {{"total", nerrors}};
    for (auto& [c, n] : errors) out["errors"][code_name(c)] = n;
    if (nerrors > 0) spdlog::error("run: {}", describe_errors(errors));

    sum.duration_s = measured;
    sum.throughput = tput;
    sum.p50_us = static_cast<double>(all.quantile(0.5)) / 1e3;
    sum.p99_us = static_cast<double>(all.quantile(0.99)) / 1e3;
    sum.p999_us = static_cast<double>(all.quantile(0.999)) / 1e3;
    sum.committed = nreads + nwrites;

    fmt::print("rdx-bench ycsb: {} threads x {} outstanding, {:.1f} s, read ratio {}, {} keys ({}), {} B values\n",
               o.threads, o.outstanding, measured, o.read_ratio, o.keys, o.dist, o.value_size);
    fmt::print("  throughput {:.0f} ops/s ({} reads, {} writes), errors {}\n", tput, nreads, nwrites, nerrors);
    fmt::print("  latency us: read p50 {:.1f} p99 {:.1f} p999 {:.1f} | write p50 {:.1f} p99 {:.1f} p999 {:.1f}\n",
               reads.quantile(0.5) / 1e3, reads.quantile(0.99) / 1e3, reads.quantile(0.999) / 1e3,
               writes.quantile(0.5) / 1e3, writes.quantile(0.99) / 1e3, writes.quantile(0.999) / 1e3);
    for (auto& [c, n] : errors) fmt::print("  error {}: {}\n", code_name(c), n);
  }
  sum.errors = nerrors + nload_errors;

  std::unordered_map<uint64_t, Acked> acked;  // of the load and the run
  for (auto& st : states)
    for (auto& [k, a] : st.acked)
      if (a.version > acked[k].version) acked[k] = a;
  int rc = nerrors > 0 || nload_errors > 0 ? 1 : 0;
  if (!o.save_acked.empty() && !save_acked_file(o.save_acked, acked)) rc = 2;
  if (o.verify_acked) {
    progress.begin("checking", 0, ops_done);
    if (verify(o, acked, phase, out, sum) != 0) rc = 3;
    progress.end();
  }
  if (!o.history.empty()) {
    std::vector<std::vector<KvOp>> histories;
    for (auto& st : states) histories.push_back(std::move(st.history));
    if (Status ws = write_kv_history(o.history, histories); !ws.is_ok()) {
      spdlog::error("rdx-bench: {}", ws.message());
      return 2;
    }
    if (int hc = check_kv_history(o.history, o.lincheck, sum); hc != 0) rc = std::max(rc, hc);
  }
  if (!o.json_path.empty()) {
    std::ofstream(o.json_path) << out.dump(2) << "\n";
  }
  return rc;
}

}  // namespace
}  // namespace rdx::bench

namespace {

// The value of `--name VALUE` or `--name=VALUE` in argv (the last one), for a summary of a command line CLI11 refused.
std::string raw_flag(int argc, char** argv, const std::string& name) {
  std::string v;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == name && i + 1 < argc) v = argv[++i];
    if (a.rfind(name + "=", 0) == 0) v = a.substr(name.size() + 1);
  }
  return v;
}

// A command line that parses but asks for something contradictory or out of range; empty if fine.
std::string refused(const rdx::bench::Options& o, const rdx::bench::TxnOptions& t, const std::string& workload,
                    bool ledger_base) {
  const bool kv = workload == "kv";
  if (o.progress_interval_s != 0 && !(o.progress_interval_s >= 0.2 && o.progress_interval_s <= 60))
    return fmt::format("--progress-interval must be 0 (off) or 0.2..60 seconds, not {}", o.progress_interval_s);
  if (o.no_run && !o.load) return "--no-run loads only: it needs --load";
  if (ledger_base && kv) return "--ledger-base is for transactional workloads (SmallBank's ledger), not --workload kv";
  if (ledger_base && o.load)
    return "--ledger-base counts what earlier runs committed since another invocation loaded the data; with --load "
           "the balances start afresh (leave it out)";
  if (o.no_run && !t.history_path.empty()) return "--history records a run, and --no-run has none";
  if (kv && !t.history_path.empty() && !o.load)
    return "--workload kv --history needs --load: the history must hold every write of its keys (values written "
           "before this invocation would read as never written)";
  if (kv && !t.history_path.empty() && o.verify_acked)
    return "--history checks linearizability of the run itself; leave out --verify-acked (its reads are not recorded)";
  if (!kv && (o.read_any || !o.lincheck.empty()))
    return "--read-from and --lincheck apply to --workload kv (transactions read inside the cluster)";
  if (o.no_run && !o.verify_from.empty()) return "--verify-from reads back saved writes: it neither loads nor runs";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  rdx::bench::capture_first_error();  // the summary's "error"
  rdx::bench::Options o;
  rdx::bench::TxnOptions t;
  std::string workload = "kv", summary_path;
  int64_t ledger_base = 0;
  CLI::App app{"rdx-bench: load generator for rdx clusters"};
  app.add_option("--config", o.config, "topology file of the target cluster")->required();
  app.add_option("--workload", workload,
                 "kv (single-key YCSB from this process) or a transactional workload run inside the cluster: "
                 "smallbank, tatp, ogp (o(G,P)), ycsb-a|b|c|f, with parameters as name:key=value,...");
  app.add_option("--coroutines", t.coroutines, "transactional: concurrent transactions per worker")
      ->check(CLI::Range(1, 4096));
  app.add_option("--nodes", t.nodes, "transactional: coordinating nodes (default: every data node)")->delimiter(',');
  app.add_option("--history", t.history_path,
                 "record the history here and check it (transactional: strict serializability, in process; kv: "
                 "linearizability per key with rdx-lincheck, needs --load)");
  std::string read_from = "primary";
  app.add_option("--read-from", read_from, "kv: GETs go to the key's primary, or to every replica in turn (any)")
      ->check(CLI::IsMember({"primary", "any"}));
  app.add_option("--lincheck", o.lincheck, "kv --history: the rdx-lincheck binary (default: next to rdx-bench, PATH)");
  app.add_option("--load-keys-per-txn", t.load_keys_per_txn,
                 "transactional: load in transactions of this many keys, recorded in the history (0: single-key)");
  app.add_option("--local-backup-reads", t.local_backup_reads, "transactional: on|off|topology")
      ->check(CLI::IsMember({"on", "off", "topology"}));
  app.add_option("--ht-batching", t.ht_batching, "transactional: on|off|topology")
      ->check(CLI::IsMember({"on", "off", "topology"}));
  app.add_flag("--validation-off", t.validation_off,
               "TEST ONLY: skip read validation (a planted anomaly the checker must report)");
  CLI::Option* ledger_opt = app.add_option(
      "--ledger-base", ledger_base,
      "transactional: cents committed to the balances by earlier runs since another invocation loaded the data (the "
      "sum of their summaries' ledger); the invariant check then covers this run too");
  app.add_option("--threads", o.threads, "client threads")->check(CLI::Range(1, 256));
  app.add_option("--outstanding", o.outstanding, "operations in flight per thread")->check(CLI::Range(1, 4096));
  app.add_option("--duration", o.duration_s, "measured seconds")->check(CLI::Range(0.1, 86400.0));
  app.add_option("--warmup", o.warmup_s, "seconds before measuring")->check(CLI::Range(0.0, 3600.0));
  app.add_option("--keys", o.keys, "key count")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 34));
  app.add_option("--value-size", o.value_size, "value bytes")->check(CLI::Range(1, 60000));
  app.add_option("--read-ratio", o.read_ratio, "fraction of reads")->check(CLI::Range(0.0, 1.0));
  app.add_option("--dist", o.dist, "key distribution")->check(CLI::IsMember({"uniform", "zipfian"}));
  app.add_option("--theta", o.theta, "zipfian skew")->check(CLI::Range(0.01, 0.999));
  app.add_flag("--load", o.load, "write every key once before the run");
  app.add_flag("--no-run", o.no_run, "load only (with --load): no run");
  app.add_flag("--verify-acked", o.verify_acked, "after the run, read back every acknowledged write");
  app.add_option("--save-acked", o.save_acked,
                 "write every acknowledged write to this file (for a later --verify-from)");
  app.add_option("--verify-from", o.verify_from, "do not load or run: read back every write saved by --save-acked");
  app.add_option("--json", o.json_path, "write results as JSON to this file");
  app.add_option("--summary", summary_path,
                 "at exit, write a compact JSON verdict here (< 3500 bytes, e.g. /dev/termination-log)");
  app.add_option("--progress-interval", o.progress_interval_s,
                 "print a progress line to stdout every this many seconds (0.2..60; 0: off)");
  app.add_option("--seed", o.seed, "random seed");
  app.add_option("--connect-timeout", o.connect_timeout_s, "seconds to wait for the cluster");

  rdx::bench::Summary sum;
  const auto finish = [&](int rc) {
    sum.exit_code = rc;
    if (rc != 0 && sum.error.empty()) sum.error = rdx::bench::first_logged_error();
    if (!summary_path.empty()) rdx::bench::write_summary(summary_path, sum);
    return rc;
  };
  const auto describe = [&](const std::string& wl) {
    sum.workload = wl;
    sum.mode = wl == "kv" ? "kv" : "txn";
    sum.unit = wl == "kv" ? "ops/s" : "tx/s";
    if (wl != "kv") sum.invariant = rdx::bench::Summary::Invariant{false, true, "not checked: nothing ran"};
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    if (rc == 0) return 0;  // --help
    summary_path = raw_flag(argc, argv, "--summary");
    std::string wl = raw_flag(argc, argv, "--workload");
    describe(wl.empty() ? "kv" : wl);
    sum.error = e.what();
    return finish(rc);
  }
  spdlog::set_pattern("%H:%M:%S.%e %^%l%$ %v");
  describe(workload);
  sum.stage = o.no_run ? "load" : "run";
  o.read_any = read_from == "any";
  if (workload == "kv") o.history = t.history_path;
  if (std::string why = refused(o, t, workload, ledger_opt->count() > 0); !why.empty()) {
    spdlog::error("rdx-bench: {}", why);
    return finish(2);
  }
  if (workload == "kv") return finish(rdx::bench::run(o, sum));
  t.config = o.config;
  t.workload = workload;
  t.duration_s = o.duration_s;
  t.load = o.load;
  t.no_run = o.no_run;
  if (ledger_opt->count() > 0) t.ledger_base = ledger_base;
  t.progress_interval_s = o.progress_interval_s;
  t.json_path = o.json_path;
  t.seed = o.seed;
  t.connect_timeout_s = o.connect_timeout_s;
  return finish(rdx::bench::run_txn(t, sum));
}
