// The replication family's conformance suite: every protocol registered in replication/protocols.def runs it.
//  - Concurrent single-key operations (GET, put, FAA, put-if-absent, compare-and-set, delete) from every worker of
//    every node on a few hot keys: the history, each operation a one-key transaction with the versions it saw and
//    created, goes through the strict-serializability checker, which for single-key operations is linearizability.
//    A protocol whose reads are sequentially consistent (registry line: Reads::kSequential) has its history without
//    the reads checked that way, and its reads by the session rule (session_reads.h).
//  - The same while a member the protocol claims to survive (registry line: `survives`) is stopped half-way: the
//    others keep serving, no operation fails, and the history stays linearizable.
//  - The primary's log feed carries every write of the history once, in version order per key.
//  - A planted fault (writes acknowledged before the other replicas have them) must be caught by the same check.
// A protocol that offers reads and plain writes only (registry line: Ops::kReadWrite) runs GET, put and delete, and
// shows that every other operation is refused and changes nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "checker/checker.h"
#include "session_reads.h"
#include "test_cluster.h"

namespace rdx::conformance {
namespace {

using namespace std::chrono_literals;
using replication::Rmw;

constexpr int kKeys = 4;
// Operations per client (36 clients: 3 nodes, 2 workers, 6 clients each) of the linearizability run, its planted
// fault, and the run that stops a member after a third of them. Sanitizer builds run 100 (3600 operations on the same
// 4 keys from the same 36 concurrent clients, still thousands of versions); paxos and hermes, whose proposers contend
// on every hot key, took 25 to 51 s each there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kOpsPerClient = 100;
#else
constexpr int kOpsPerClient = 250;
#endif

struct Run {
  std::atomic<bool> go{false};
  std::vector<std::atomic<bool>> stop_node;  // a node's drivers stop issuing operations
  std::atomic<bool> until_told{false};       // clients run until `finish` instead of ops_per_client operations
  std::atomic<bool> finish{false};
  std::atomic<int> active{0};
  std::atomic<uint64_t> ops_done{0};
  std::mutex mu;
  std::vector<txn::TxRecord> history;
  std::vector<std::string> failures;
  int ops_per_client = 250;
  int clients_per_worker = 6;
  bool read_modify_write = true;  // the protocol offers every Rmw (else: reads, plain puts and deletes)
  explicit Run(int nodes) : stop_node(nodes) {}
};

// One worker's clients: random single-key operations on kKeys keys, each recorded with its real-time interval.
class KvDriver final : public server::Service {
 public:
  KvDriver(server::ServiceEnv& env, Run& run, int node)
      : env_(env), run_(run), node_(node), rng_(node * 7919 + env.ctx.worker_index()) {}

  size_t poll() override {
    if (started_ || !run_.go.load()) return 0;
    started_ = true;
    for (int i = 0; i < run_.clients_per_worker; ++i) {
      ++active_;
      ++run_.active;
      rpc::spawn(client(i));
    }
    return 1;
  }
  size_t inflight() const override { return static_cast<size_t>(active_); }

 private:
  rpc::Task<void> client(int client) {
    for (int i = 0; (run_.until_told ? !run_.finish.load() : i < run_.ops_per_client) && !run_.stop_node[node_].load();
         ++i)
      co_await one_op(client);
    --active_;
    --run_.active;
  }

  rpc::Task<void> one_op(int client) {
    const std::string key = "key" + std::to_string(rng_() % kKeys);
    txn::TxRecord rec;
    // (node, worker, client): the record's session (id >> 24), then a sequence number.
    rec.id = (uint64_t{static_cast<uint32_t>(node_)} << 40) | (uint64_t{env_.ctx.worker_index()} << 32) |
             (uint64_t{static_cast<uint32_t>(client)} << 24) | ++seq_;
    unsigned dice = rng_() % 100;
    if (!run_.read_modify_write && dice >= 65 && dice < 95) dice = dice < 90 ? 40 : 95;  // puts and deletes instead
    rec.start_ns = now_ns();
    if (dice < 40) {
      rec.type = "get";
      cluster::KvResult r = co_await env_.replication.get(key);
      rec.end_ns = now_ns();
      rec.committed = r.status == Code::kOk || r.status == Code::kNotFound;
      if (rec.committed) {
        rec.reads.push_back({key, r.status == Code::kOk ? r.version : 0});
        if (r.status == Code::kOk) last_seen_[key] = r.value;
      }
      if (!rec.committed) fail(fmt::format("get {}: {} {}", key, code_name(r.status), r.error));
    } else {
      Rmw op;
      if (dice < 65) {
        rec.type = "put";
        op = Rmw::put(std::to_string(rng_() % 1000));
      } else if (dice < 85) {
        rec.type = "add";
        op = Rmw::add(static_cast<int64_t>(rng_() % 7) - 3);
      } else if (dice < 90) {
        rec.type = "put-if-absent";
        op = Rmw::put("1");
        op.when = Rmw::When::kIfAbsent;
      } else if (dice < 95) {
        rec.type = "compare-and-set";
        op = Rmw::put(std::to_string(rng_() % 1000));
        op.when = Rmw::When::kIfEquals;
        op.expected = last_seen_.count(key) ? last_seen_[key] : "0";
      } else {
        rec.type = "delete";
        op = Rmw::remove();
      }
      const bool reads = !op.is_blind_put();
      replication::WriteResult r = co_await env_.replication.write(key, std::move(op));
      rec.end_ns = now_ns();
      rec.committed = r.status == Code::kOk;
      if (!rec.committed) {
        fail(fmt::format("{} {}: {} {}", rec.type, key, code_name(r.status), r.error));
      } else if (!r.combined) {
        if (reads && r.prior_is_predecessor) rec.reads.push_back({key, r.prior_version});
        if (r.version != r.prior_version) rec.writes.push_back({key, r.version, rec.type == "delete"});
      }
    }
    ++run_.ops_done;
    std::lock_guard<std::mutex> lk(run_.mu);
    run_.history.push_back(std::move(rec));
  }

  void fail(std::string what) {
    std::lock_guard<std::mutex> lk(run_.mu);
    run_.failures.push_back(fmt::format("n{}: {}", node_, std::move(what)));
  }

  server::ServiceEnv& env_;
  Run& run_;
  int node_;
  std::mt19937_64 rng_;
  bool started_ = false;
  int active_ = 0;
  uint64_t seq_ = 0;
  std::map<std::string, std::string> last_seen_;
};

struct Outcome {
  std::vector<txn::TxRecord> history;
  std::vector<std::string> failures;
  checker::CheckReport report;  // Reads::kSequential: of the history without its reads
  bool sequential_reads = false;
  SessionReadReport session;             // Reads::kSequential: the reads
  std::vector<cluster::LogRecord> feed;  // copies (key and value owned below)
  std::vector<std::string> feed_keys;
  uint64_t feed_from = 0;  // the subscription's start: the feed holds every LSN after it
  uint64_t ops_after_stop = 0;
  bool ok() const { return report.ok() && session.wrong_count == 0; }
  uint64_t reads() const { return report.stats.reads + session.reads; }
  uint64_t checked() const { return report.stats.committed + session.reads; }
};

// Runs the clients on a 3-node cluster; with `stop_member`, stops node 2 once a third of the operations are done.
const replication::ReplicationEntry& entry(const std::string& protocol) {
  return *replication::replication_protocols().find(protocol);
}

Outcome run_cluster(const std::string& protocol, replication::TestFaults faults, bool stop_member,
                    int ops_per_client = 250) {
  Outcome out;
  ClusterOptions o = replication_options(protocol);
  o.faults = faults;
  Run run(o.nodes);
  run.ops_per_client = ops_per_client;
  run.read_modify_write = entry(protocol).ops == replication::Ops::kReadModifyWrite;
  run.until_told = stop_member;
  TestCluster c(o, [&run](int node, server::ServiceEnv& env) -> std::unique_ptr<server::Service> {
    return std::make_unique<KvDriver>(env, run, node);
  });
  if (auto started = c.start(); !started) {
    ADD_FAILURE() << started.message();
    return out;
  }
  // Subscribed before any write (the drivers wait for run.go); the feed calls it under its own lock, and `out.feed`
  // is read after unsubscribe(), which takes that lock too.
  auto sub = c.node(0).replication().log_feed().subscribe([&](const cluster::LogRecord& r) {
    out.feed.push_back(cluster::LogRecord{r.lsn, {}, nullptr, r.version});
    out.feed_keys.emplace_back(r.key);
  });
  out.feed_from = sub.from;
  const uint64_t total = uint64_t(o.nodes) * o.workers * run.clients_per_worker * run.ops_per_client;
  run.go = true;
  uint64_t at_stop = 0;
  if (stop_member) {  // a third of the usual operations, then node 2 goes; the others run on for a second
    EXPECT_TRUE(wait_for([&] { return run.ops_done.load() >= total / 3; }, 60s));
    run.stop_node[2] = true;
    c.stop(2);
    at_stop = run.ops_done.load();
    std::this_thread::sleep_for(1s);
    out.ops_after_stop = run.ops_done.load() - at_stop;
    run.finish = true;
  }
  EXPECT_TRUE(wait_for([&] { return run.go && run.active.load() == 0 && run.ops_done.load() > 0; }, 120s))
      << run.ops_done.load() << " of " << total << " operations done";
  c.node(0).replication().log_feed().unsubscribe(sub.id);
  std::lock_guard<std::mutex> lk(run.mu);
  out.history = run.history;
  out.failures = run.failures;
  auto is_read = [](const txn::TxRecord& t) { return t.type == "get"; };
  std::vector<txn::TxRecord> linearizable = out.history;
  if (entry(protocol).reads == replication::Reads::kSequential) {
    out.sequential_reads = true;
    out.session = check_session_reads(
        out.history, [](const txn::TxRecord& t) { return t.id >> 24; }, is_read);
    std::erase_if(linearizable, is_read);
  }
  auto report = checker::check_history(linearizable);
  EXPECT_TRUE(report.is_ok()) << report.status().to_string();
  if (report.is_ok()) out.report = std::move(report.value());
  if (!faults.ack_before_replication && !out.ok()) std::printf("%s", save_history(out.history).c_str());
  return out;
}

class ReplicationConformance : public ::testing::TestWithParam<std::string> {};

std::string describe(const Outcome& r) {
  std::map<std::string, int> by_type;
  for (const auto& t : r.history) ++by_type[t.type];
  std::string s;
  for (const auto& [t, n] : by_type) s += fmt::format(" {}={}", t, n);
  std::string reads;
  if (r.sequential_reads) {
    reads = fmt::format("reads (sequential consistency per session): {} checked, {} stale (allowed), {} wrong\n",
                        r.session.reads, r.session.stale, r.session.wrong_count);
    for (const auto& w : r.session.wrong) reads += "  " + w + "\n";
  }
  return fmt::format("operations:{}\n{}{}", s, reads, checker::format_report(r.report));
}

TEST_P(ReplicationConformance, ConcurrentSingleKeyOperationsAreLinearizable) {
  Outcome r = run_cluster(GetParam(), {}, false, kOpsPerClient);
  for (const auto& f : r.failures) ADD_FAILURE() << f;
  EXPECT_TRUE(r.ok()) << describe(r);
  EXPECT_EQ(r.checked(), r.history.size());
  // Not vacuous: keys were written many times and read by other nodes.
  EXPECT_GT(r.report.stats.versions, 100u);
  EXPECT_GT(r.reads(), 500u);
  std::printf("%s", describe(r).c_str());
}

TEST_P(ReplicationConformance, LogFeedCarriesEveryWriteOnceInVersionOrder) {
  if (!entry(GetParam()).complete_feed) {
    // Not a skip: the registry line says the protocol publishes no feed; check that it does not (a tenth of the
    // usual operations write enough for that).
    Outcome r = run_cluster(GetParam(), {}, false, 25);
    EXPECT_GT(r.history.size(), 500u);
    EXPECT_TRUE(r.feed.empty()) << r.feed.size() << " records in a feed its registry line says is not published";
    return;
  }
  Outcome r = run_cluster(GetParam(), {}, false);
  ASSERT_TRUE(r.failures.empty()) << r.failures.front();
  std::map<std::pair<std::string, uint64_t>, int> written;
  for (const auto& t : r.history)
    for (const auto& w : t.writes) ++written[{w.key, w.version}];
  std::map<std::pair<std::string, uint64_t>, int> fed;
  std::map<std::string, uint64_t> last_version;
  for (size_t i = 0; i < r.feed.size(); ++i) {
    EXPECT_EQ(r.feed[i].lsn, r.feed_from + i + 1) << "LSNs must follow one another from the subscription's start";
    uint64_t& lv = last_version[r.feed_keys[i]];
    EXPECT_GT(r.feed[i].version, lv) << r.feed_keys[i] << ": versions of a key must increase along the feed";
    lv = r.feed[i].version;
    ++fed[{r.feed_keys[i], r.feed[i].version}];
  }
  EXPECT_EQ(written.size(), r.history.empty() ? 0 : written.size());
  for (const auto& [kv, n] : written) EXPECT_EQ(fed[kv], 1) << kv.first << " v" << kv.second << " in the feed";
  // Every write in the feed belongs to the history (combined puts have no version of their own; their run's last put
  // is in both).
  for (const auto& [kv, n] : fed) EXPECT_EQ(written.count(kv), 1u) << kv.first << " v" << kv.second;
  EXPECT_GT(r.feed.size(), 100u);
}

// Primary-backup's backups that take their time between checking a "make readable" notice and acting on it (its
// knob, TestFaults::slow_readable_notices, which no other protocol reads, so the test runs on primary-backup only):
// a newer write replicated meanwhile must stay hidden until its own notice.
// Without the version tag in the lock word this made a backup serve a write before its primary committed it; and a
// delete's notice that read the record's version after a newer write replaced it removed that newer write at the
// backup, which then read the key as absent (3 of 3 runs; seen once in CI under TSan without the pause).
TEST(PrimaryBackup, LinearizableWhenReadableNoticesAreSlow) {
  replication::TestFaults f;
  f.slow_readable_notices = true;
  Outcome r = run_cluster("primary-backup", f, false);
  for (const auto& fl : r.failures) ADD_FAILURE() << fl;
  EXPECT_TRUE(r.report.ok()) << describe(r);
  EXPECT_GT(r.report.stats.versions, 100u);
}

// Why hermes' plain writes are conditional (hermes.h): with the paper's (ts + 2, acknowledged whatever a member
// holds; TestFaults::unconditional_writes) an RMW commits on a write while a concurrent, higher write of the same
// base was acknowledged between them, a lost update the checker must find (13 of 13 runs, release and TSan: 2 to 9
// such cycles in 9000 operations; a run that happens to have none is followed by up to two more).
TEST(Hermes, ThePapersUnconditionalWritesLoseUpdatesNextToRmws) {
  replication::TestFaults f;
  f.unconditional_writes = true;
  Outcome r;
  for (int run = 0; run < 3 && r.report.ok(); ++run) r = run_cluster("hermes", f, false);
  EXPECT_FALSE(r.report.ok()) << "the paper's writes beside RMWs went unnoticed in 3 runs\n" << describe(r);
  std::printf("%s", checker::format_report(r.report).c_str());
}

TEST_P(ReplicationConformance, PlantedFaultIsCaught) {
  replication::TestFaults f;
  f.ack_before_replication = true;
  Outcome r = run_cluster(GetParam(), f, false, kOpsPerClient);  // (the same size as the run it guards)
  EXPECT_FALSE(r.ok()) << "acknowledging writes before the replicas have them went unnoticed\n" << describe(r);
  std::printf("%s", describe(r).c_str());
}

// Runs `body` once `go` is set, on the worker it was made for (operations are issued from a worker's thread, as the
// Redis endpoint does).
class OneShot final : public server::Service {
 public:
  using Body = std::function<rpc::Task<void>(server::ServiceEnv&)>;
  OneShot(server::ServiceEnv& env, Body body, const std::atomic<bool>& go, std::atomic<bool>& done)
      : env_(env), body_(std::move(body)), go_(go), done_(done) {}
  size_t poll() override {
    if (started_ || !go_.load()) return 0;
    started_ = true;
    rpc::spawn([](OneShot* self) -> rpc::Task<void> {
      co_await self->body_(self->env_);
      self->done_ = true;
    }(this));
    return 1;
  }

 private:
  server::ServiceEnv& env_;
  Body body_;
  const std::atomic<bool>& go_;
  std::atomic<bool>& done_;
  bool started_ = false;
};

// Each Rmw a read/write protocol does not offer is refused with kUnsupported and a reason, and the key keeps its
// value and version; a protocol that offers them applies each.
TEST_P(ReplicationConformance, OperationsItDoesNotOfferAreRefusedAndChangeNothing) {
  const bool offers_all = entry(GetParam()).ops == replication::Ops::kReadModifyWrite;
  std::vector<std::pair<std::string, Rmw>> ops;
  ops.emplace_back("add", Rmw::add(1));
  ops.emplace_back("append", Rmw::append("1"));
  for (auto when : {Rmw::When::kIfAbsent, Rmw::When::kIfPresent, Rmw::When::kIfEquals}) {
    Rmw op = Rmw::put("2");
    op.when = when;
    op.expected = "1";
    ops.emplace_back(fmt::format("conditional put {}", static_cast<int>(when)), op);
  }
  Rmw getset = Rmw::put("3");
  getset.return_old = true;
  ops.emplace_back("put returning the old value", getset);
  Rmw getdel = Rmw::remove();
  getdel.return_old = true;
  ops.emplace_back("delete returning the old value", getdel);
  std::atomic<bool> go{false}, done{false};
  std::vector<std::string> failures;
  auto body = [&](server::ServiceEnv& env) -> rpc::Task<void> {
    for (const auto& [name, op] : ops) {
      replication::WriteResult put = co_await env.replication.write("k", Rmw::put("1"));
      if (put.status != Code::kOk) failures.push_back("put: " + put.error);
      cluster::KvResult before = co_await env.replication.get("k");
      replication::WriteResult r = co_await env.replication.write("k", op);
      cluster::KvResult after = co_await env.replication.get("k");
      if (offers_all) {
        if (r.status != Code::kOk) failures.push_back(fmt::format("{}: {} {}", name, code_name(r.status), r.error));
        continue;
      }
      if (r.status != Code::kUnsupported || r.error.empty())
        failures.push_back(
            fmt::format("{}: {} '{}', expected UNSUPPORTED with a reason", name, code_name(r.status), r.error));
      if (after.status != Code::kOk || after.value != "1" || after.version != before.version)
        failures.push_back(fmt::format("{}: the key changed: '{}' v{} -> '{}' v{}", name, before.value, before.version,
                                       after.value, after.version));
    }
  };
  ClusterOptions o = replication_options(GetParam());
  TestCluster c(o, [&](int node, server::ServiceEnv& env) -> std::unique_ptr<server::Service> {
    if (node != 0 || env.ctx.worker_index() != 0) return nullptr;
    return std::make_unique<OneShot>(env, body, go, done);
  });
  ASSERT_TRUE(c.start());
  go = true;
  ASSERT_TRUE(wait_for([&] { return done.load(); }, 30s));
  for (const auto& f : failures) ADD_FAILURE() << f;
}

// zab's fence (zab.h): once its followers voted in a newer view, a leader of the old one (paused, or cut off) gets
// no majority for a proposal, so it commits nothing; once the fences go (a campaign lost), its write commits.
TEST(Zab, ALeaderWhoseFollowersVotedInANewerViewCommitsNothing) {
  std::atomic<bool> go{false}, done{false};
  std::vector<std::string> failures;
  TestCluster* running = nullptr;
  const auto fence = [&](bool on) {
    for (int n : {1, 2}) {
      cluster::Membership& m = running->node(n).membership();
      if (on && !m.vote(0, m.view(0).view + 1, 1)) failures.push_back(fmt::format("n{} did not vote", n));
      if (!on) m.lift_vote_fence(0);
    }
  };
  auto body = [&](server::ServiceEnv& env) -> rpc::Task<void> {
    replication::WriteResult w = co_await env.replication.write("k", Rmw::put("1"));
    if (w.status != Code::kOk) failures.push_back("first put: " + w.error);
    fence(true);
    w = co_await env.replication.write("k", Rmw::put("2"));
    if (w.status == Code::kOk) failures.push_back("a put of the fenced view committed");
    cluster::KvResult r = co_await env.replication.get("k");  // its marked copy: no majority to commit it either
    if (r.status == Code::kOk) failures.push_back("a read committed the fenced put: '" + r.value + "'");
    fence(false);
    r = co_await env.replication.get("k");  // commits the put that may or may not have taken effect
    if (r.status != Code::kOk || r.value != "2")
      failures.push_back(fmt::format("after the fences: {} '{}' {}", code_name(r.status), r.value, r.error));
    w = co_await env.replication.write("k", Rmw::put("3"));
    if (w.status != Code::kOk) failures.push_back("put after the fences: " + w.error);
  };
  TestCluster c(replication_options("zab"), [&](int node, server::ServiceEnv& env) -> std::unique_ptr<server::Service> {
    if (node != 0 || env.ctx.worker_index() != 0) return nullptr;  // node 0 leads view 0
    return std::make_unique<OneShot>(env, body, go, done);
  });
  running = &c;
  ASSERT_TRUE(c.start());
  go = true;
  ASSERT_TRUE(wait_for([&] { return done.load(); }, 30s));
  for (const auto& f : failures) ADD_FAILURE() << f;
}

class ReplicationSurvivesLoss : public ReplicationConformance {};

TEST_P(ReplicationSurvivesLoss, KeepsServingAndLinearizableWhenAMemberStops) {
  Outcome r = run_cluster(GetParam(), {}, true, kOpsPerClient);  // (node 2 stops after a third of them)
  for (const auto& f : r.failures) ADD_FAILURE() << f;
  EXPECT_TRUE(r.ok()) << describe(r);
  EXPECT_GT(r.ops_after_stop, 100u) << "the surviving members must keep serving";
  std::printf("in the second after the stop: %llu operations\n%s", static_cast<unsigned long long>(r.ops_after_stop),
              describe(r).c_str());
}

std::vector<std::string> protocols(bool survivors_only) {
  std::vector<std::string> out;
  for (const auto& e : replication::replication_protocols().entries())
    if (!survivors_only || e.survives != replication::Survives::kNoLoss) out.emplace_back(e.name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Registry, ReplicationConformance, ::testing::ValuesIn(protocols(false)), param_name);
INSTANTIATE_TEST_SUITE_P(Registry, ReplicationSurvivesLoss, ::testing::ValuesIn(protocols(true)), param_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ReplicationSurvivesLoss);

}  // namespace
}  // namespace rdx::conformance
