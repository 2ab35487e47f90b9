// rdx-bench kv mode (kv_mode.h).
#include "bench/kv_mode.h"

#include <spdlog/spdlog.h>

#include <algorithm>
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
#include "client/client.h"
#include "common/hash.h"
#include "common/histogram.h"
#include "replication/replication.h"

namespace rdx::bench {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using rpc::Task;
using Options = KvOptions;

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
  std::unordered_map<uint64_t, std::string> seen;  // the value this thread last saw of a key (a CAS expects it)
  std::mt19937_64 rng;
  int active = 0;
};

std::string make_value(uint64_t key, std::mt19937_64& rng, const Options& o) {
  if (o.numeric_values()) return std::to_string(rng() % 1000000);
  const uint32_t size = o.value_size;
  std::string v(size, '\0');
  uint64_t x = rng() ^ key;
  for (uint32_t i = 0; i < size; ++i) {
    if (i % 8 == 0) x = x * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = static_cast<char>('a' + ((x >> ((i % 8) * 8)) & 0xff) % 26);
  }
  return v;
}

// --give-up-after: the run stops early once no operation of any session completed for that long (a target that
// went away, or an outage longer than the user accepts), instead of failing operations until --duration ends.
class StallWatch {
 public:
  explicit StallWatch(double give_up_s) : limit_ns_(static_cast<int64_t>(give_up_s * 1e9)), last_ns_(now_ns()) {}
  void completed() { last_ns_.store(now_ns(), std::memory_order_relaxed); }
  // True once the run has given up (every session then stops).
  bool gave_up() {
    if (gave_up_.load(std::memory_order_relaxed)) return true;
    if (limit_ns_ == 0 || now_ns() - last_ns_.load(std::memory_order_relaxed) < limit_ns_) return false;
    gave_up_.store(true, std::memory_order_relaxed);
    return true;
  }
  bool has_given_up() const { return gave_up_.load(std::memory_order_relaxed); }

 private:
  static int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  }
  const int64_t limit_ns_;  // 0: never
  std::atomic<int64_t> last_ns_;
  std::atomic<bool> gave_up_{false};
};

// --rate: a session issues an operation every sessions / rate seconds (from a random phase, so the sessions do
// not issue together), or as soon as its previous one completed when that took longer. A session that fell more
// than one interval behind drops the backlog instead of issuing a burst. Latency is measured from the issue.
class Pacer {
 public:
  Pacer(const Options& o, std::mt19937_64& rng) {
    if (o.rate <= 0) return;
    interval_ = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(static_cast<double>(o.threads) * o.outstanding / o.rate));
    next_ = Clock::now() +
            std::chrono::duration_cast<Clock::duration>(interval_ * std::uniform_real_distribution<double>(0, 1)(rng));
  }
  // How long to wait before the next operation, if at all.
  std::optional<Clock::duration> wait() {
    if (interval_ == Clock::duration::zero()) return std::nullopt;
    const auto now = Clock::now();
    const auto at = std::max(next_, now - interval_);
    next_ = at + interval_;
    if (at <= now) return std::nullopt;
    return at - now;
  }

 private:
  Clock::duration interval_{};
  Clock::time_point next_;
};

// What one operation did.
struct Done {
  Code status = Code::kOk;
  std::string error;
  uint64_t version = 0;
  bool completed = false;              // kOk, or a GET of an absent key
  bool keep = false;                   // the history keeps it: completed, or a write that may have taken effect
  std::optional<std::string> written;  // the key's value after a write that wrote
};

// Executes `op` (its kind and arguments filled in) and fills in its result and end time (the history entry).
// A write the cluster refused before doing anything (unsupported, not applicable) or that was never sent changed
// nothing and leaves the history; one that failed after it was sent has an unknown outcome.
Task<Done> run_op(client::Client& c, ThreadState& st, const Options& o, KvOp& op) {
  const std::string key = KeyChooser::key_name(op.key);
  Done d;
  std::optional<std::string> holds;  // what the key held right after the operation, as it saw it (nullopt: absent)
  if (op.kind == KvKind::kGet || op.kind == KvKind::kSet) {
    client::KvResult r;
    if (op.kind == KvKind::kGet) {
      r = co_await c.get(key, o.read_any);
    } else {
      r = co_await c.put(key, op.value, o.write_any);
    }
    op.end = wall_ns();
    d.status = r.status;
    d.error = std::move(r.error);
    d.version = r.version;
    d.completed = r.status == Code::kOk || (op.kind == KvKind::kGet && r.status == Code::kNotFound);
    d.keep = d.completed || (op.kind == KvKind::kSet && !client::Client::never_sent(r));
    op.found = r.status == Code::kOk;
    if (op.kind == KvKind::kGet) op.value = std::move(r.value);
    if (op.found) holds = op.value;
  } else {
    client::Rmw rmw =
        op.kind == KvKind::kIncr ? client::Rmw::add(op.by) : client::Rmw::compare_and_set(op.expect, op.value);
    client::WriteResult w = co_await c.write(key, std::move(rmw), o.write_any);
    op.end = wall_ns();
    d.status = w.status;
    d.error = std::move(w.error);
    d.version = w.version;
    d.completed = w.status == Code::kOk;
    const bool refused = w.status == Code::kUnsupported || w.status == Code::kInvalidArgument;
    d.keep = d.completed || (!refused && !client::Client::never_sent(w));
    op.number = w.number;
    op.flag = w.applied;
    if (op.kind == KvKind::kIncr) holds = std::to_string(w.number);
    if (op.kind == KvKind::kCas && w.applied) holds = op.value;
    if (op.kind == KvKind::kCas && !w.applied && w.existed) holds = w.old_value;
  }
  op.known = d.completed;
  if (!d.completed) co_return d;
  if (holds) {
    st.seen[op.key] = *holds;
  } else {
    st.seen.erase(op.key);
  }
  if (op.kind == KvKind::kSet || op.kind == KvKind::kIncr || (op.kind == KvKind::kCas && op.flag)) d.written = holds;
  co_return d;
}

// Records an acknowledged write (the newest version of the key) for the read-back (--verify-acked, --save-acked).
void remember_acked(ThreadState& st, uint64_t key, const Done& d) {
  if (!d.written) return;
  Acked& a = st.acked[key];
  if (d.version > a.version) a = Acked{d.version, hash_key(*d.written)};
}

// The next operation of a session: a read, or a write of a kind drawn from --write-mix. Drawn after the backoff
// wait, so that a CAS expects the newest value its thread has seen (the thread's other sessions go on meanwhile).
KvOp next_op(ThreadState& st, const Options& o, KeyChooser& chooser, uint32_t client, bool read) {
  KvOp op;
  op.client = client;
  op.key = chooser.next(st.rng);
  op.kind = read ? KvKind::kGet : o.write_mix[std::uniform_int_distribution<size_t>(0, o.write_mix.size() - 1)(st.rng)];
  if (op.kind == KvKind::kSet || op.kind == KvKind::kCas) op.value = make_value(op.key, st.rng, o);
  if (op.kind == KvKind::kIncr) op.by = 1;
  if (op.kind == KvKind::kCas) {
    auto it = st.seen.find(op.key);
    op.expect = it == st.seen.end() ? "0" : it->second;
  }
  return op;
}

Task<void> op_loop(client::Client& c, ThreadState& st, const Options& o, KeyChooser& chooser, Clock::time_point start,
                   Clock::time_point end, uint32_t client, StallWatch& stall) {
  Pacer pacer(o, st.rng);
  // After an operation the cluster could not serve (unavailable, timed out, busy) the session waits before its next
  // one of that kind (read or write), 1 ms doubling to 64 ms while such failures last: a shard without its leader or
  // a restarting node is not flooded with retries, and the history does not fill with failed writes (each is of
  // unknown outcome there, which the checker's search pays for). Per kind: reads that a member still serves locally
  // while writes wait for a new leader must not cut the writes' backoff short. (Refusals, e.g. INCR of a value that
  // is no integer, do not wait.)
  std::chrono::milliseconds backoff[2] = {0ms, 0ms};  // [read]
  while (Clock::now() < end && !stall.gave_up()) {
    if (auto wait = pacer.wait()) co_await c.sched().sleep_for(*wait);
    const bool read = std::bernoulli_distribution(o.read_ratio)(st.rng);
    if (backoff[read].count() > 0) co_await c.sched().sleep_for(backoff[read]);
    KvOp op = next_op(st, o, chooser, client, read);
    auto t0 = Clock::now();
    op.start = wall_ns();
    Done d = co_await run_op(c, st, o, op);
    auto t1 = Clock::now();
    if (!o.history.empty() && d.keep) st.history.push_back(std::move(op));
    if (!d.completed && st.errors[d.status]++ == 0)
      spdlog::warn("first {} error of this thread ({}): {}", code_name(d.status), read ? "read" : "write", d.error);
    const bool unserved = d.status == Code::kUnavailable || d.status == Code::kTimeout || d.status == Code::kBusy;
    backoff[read] = unserved ? std::min(std::max(2 * backoff[read], 1ms), 64ms) : 0ms;
    if (!d.completed) continue;  // throughput and latency count completed operations; errors are counted above
    stall.completed();
    st.progress.fetch_add(1, std::memory_order_relaxed);
    remember_acked(st, op.key, d);
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
    KvOp op;
    op.client = client;
    op.key = next.fetch_add(1);
    if (op.key >= to) break;
    op.kind = KvKind::kSet;
    op.value = make_value(op.key, st.rng, o);
    op.start = wall_ns();
    Done d = co_await run_op(c, st, o, op);
    st.progress.fetch_add(1, std::memory_order_relaxed);
    if (!o.history.empty() && d.keep) st.history.push_back(op);
    if (!d.completed) {
      if (st.errors[d.status]++ == 0) spdlog::warn("first {} error while loading: {}", code_name(d.status), d.error);
    } else {
      ++st.loaded;
      remember_acked(st, op.key, d);
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

// Whether `protocol` (the topology's replication) promises only sequentially consistent reads; an unknown name (a
// topology from another build) is checked as linearizable, the stronger claim.
bool promises_sequential_reads(std::string_view protocol) {
  const replication::ReplicationEntry* e = replication::replication_protocols().find(protocol);
  return e != nullptr && e->reads == replication::Reads::kSequential;
}

}  // namespace

bool KvOptions::numeric_values() const {
  return std::find(write_mix.begin(), write_mix.end(), KvKind::kIncr) != write_mix.end();
}

int run_kv(const Options& o, Summary& sum) {
  sum.mode = "kv";
  sum.unit = "ops/s";
  sum.stage = o.load ? "load" : "run";
  auto topo = cluster::load_topology(o.config);
  if (!topo) {
    spdlog::error("rdx-bench: {}", topo.status().message());
    return 2;
  }
  const bool sequential_reads = o.sequential_reads.value_or(promises_sequential_reads(topo->replication));
  if (!o.history.empty() && sequential_reads && o.read_any) {
    spdlog::error("rdx-bench: {}", kSequentialReadsNeedOneNode);
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
  for (KvKind k : o.write_mix)
    out["workload"]["write_mix"].push_back(k == KvKind::kIncr ? "incr" : k == KvKind::kCas ? "cas" : "set");
  out["config"] = {{"threads", o.threads},
                   {"outstanding", o.outstanding},
                   {"duration_s", o.duration_s},
                   {"transport", topo->transport},
                   {"nodes", topo->nodes.size()},
                   {"shards", topo->shards.size()},
                   {"rate", o.rate}};
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
  bool gave_up = false;  // --give-up-after stopped the run
  if (!o.no_run) {
    sum.stage = "run";
    KeyChooser proto_chooser(o.keys, o.dist == "zipfian", o.theta);
    auto start = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o.warmup_s * 1000));
    auto end = start + std::chrono::milliseconds(static_cast<int64_t>(o.duration_s * 1000));
    auto run_t0 = Clock::now();
    StallWatch stall(o.give_up_after_s);
    progress.begin("running", o.warmup_s + o.duration_s, ops_done);  // the warm-up is part of the stage
    phase([&](client::Client& c, ThreadState& st, uint16_t t) {
      st.rng.seed(o.seed * 104729 + t);
      KeyChooser chooser = proto_chooser;
      st.active = static_cast<int>(o.outstanding);
      auto s = std::max(start, Clock::now());
      for (uint32_t i = 0; i < o.outstanding; ++i)
        rpc::spawn(op_loop(c, st, o, chooser, s, end, t * o.outstanding + i, stall));
      while (st.active > 0) c.run_once();
    });
    progress.end();
    if (failed_connect.load() > 0) return 1;
    gave_up = stall.has_given_up();
    // Measured up to where the sessions stopped: the end, or when the run gave up (at least a moment, for the rates).
    const auto stopped = gave_up ? std::max(Clock::now(), start + std::chrono::milliseconds(1)) : end;
    double measured = std::chrono::duration<double>(stopped - std::max(start, run_t0)).count();

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
    if (gave_up) {
      out["gave_up_after_s"] = o.give_up_after_s;
      spdlog::error(
          "run: stopped {:.1f} s into a {:.0f} s run: no operation completed for {:.0f} s (--give-up-after); {}",
          std::chrono::duration<double>(Clock::now() - run_t0).count(), o.warmup_s + o.duration_s, o.give_up_after_s,
          describe_errors(errors));
    } else if (nerrors > 0) {
      spdlog::error("run: {}", describe_errors(errors));
    }

    sum.duration_s = measured;
    sum.throughput = tput;
    sum.p50_us = static_cast<double>(all.quantile(0.5)) / 1e3;
    sum.p99_us = static_cast<double>(all.quantile(0.99)) / 1e3;
    sum.p999_us = static_cast<double>(all.quantile(0.999)) / 1e3;
    sum.committed = nreads + nwrites;

    fmt::print("rdx-bench ycsb: {} threads x {} outstanding, {:.1f} s, read ratio {}, {} keys ({}), {} B values\n",
               o.threads, o.outstanding, measured, o.read_ratio, o.keys, o.dist, o.value_size);
    if (o.rate > 0) fmt::print("  paced: target {:.0f} ops/s over {} sessions\n", o.rate, o.threads * o.outstanding);
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
  int rc = nerrors > 0 || nload_errors > 0 || gave_up ? 1 : 0;
  if (!o.save_acked.empty() && !save_acked_file(o.save_acked, acked)) rc = 2;
  if (o.verify_acked && gave_up) {
    // The cluster answered nothing for --give-up-after: reading back would only time out key by key (a minute of
    // "checking" in the e2e whose target was deleted) and prove nothing about the data.
    out["verify"] = {{"skipped", "the run gave up: the cluster did not answer"}};
    fmt::print("verify: not run: the run gave up (no operation completed for {:.0f} s)\n", o.give_up_after_s);
  } else if (o.verify_acked) {
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
    if (int hc = check_kv_history(o.history, o.lincheck, sequential_reads, sum); hc != 0) rc = std::max(rc, hc);
  }
  if (!o.json_path.empty()) {
    std::ofstream(o.json_path) << out.dump(2) << "\n";
  }
  return rc;
}

}  // namespace rdx::bench
