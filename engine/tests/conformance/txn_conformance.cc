// The transaction family's conformance suite: every protocol registered in txn/protocols.def runs it with every
// primitives choice it honours (parameter "occ+onesided", with reads at the primaries; plain "dnl4" is rpc; `hybrid`
// only where its phases differ from `onesided`'s, else it is the same code), on an
// in-process 3-node, 3-replica cluster of real rdxd nodes (TCP on loopback). Every worker of every node drives the
// workload through the service hook rdxd offers its front ends: load its share of the data, run transactions from
// several coroutines, record the history; then one worker runs the workload's invariant check and the history goes
// through the strict-serializability checker.
//  - SmallBank (conflicting: 10% hot accounts): strictly serializable, total balance conserved.
//  - TATP (more inserts and deletes than the standard mix): referential integrity.
//  - TPC-C-lite (NewOrder and Payment): strictly serializable, TPC-C's consistency conditions 1-5 (tpcc.h).
//  - O(G,P) and transactional YCSB (A, and RCC's: read-modify-writes, 5 us of computation): strictly serializable.
//  - A backup stopped half-way through SmallBank: the others keep committing, nothing is half-applied (balance and
//    history both check out).
//  - A planted anomaly (commit does not check what the transaction read) must be caught by the same check.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>

#include "checker/checker.h"
#include "test_cluster.h"
#include "workload/bulk.h"
#include "workload/workload.h"

namespace rdx::conformance {
namespace {

using namespace std::chrono_literals;
using namespace workload;

struct RunConfig {
  std::string workload;
  LoadOptions load;
  int coroutines = 8;           // per worker
  int attempts = 150;           // per coroutine
  bool validation_off = false;  // the planted anomaly
  bool local_backup_reads = true;
  bool stop_backup = false;  // stop node 2 (a backup) once a third of the attempts are done
};

// What the drivers share with the test thread.
struct Shared {
  const Workload* workload = nullptr;
  RunConfig cfg;
  int drivers = 0;
  std::atomic<int> next_index{0};
  std::atomic<bool> go{false};
  std::atomic<int> loaded{0}, ran{0};
  std::vector<std::atomic<int>> ran_on_node = std::vector<std::atomic<int>>(3);
  std::atomic<bool> checker_claimed{false};  // the invariant check runs on one driver of node 0 (never stopped)
  std::atomic<uint64_t> attempts{0};
  std::vector<std::atomic<bool>> stop_node = std::vector<std::atomic<bool>>(3);
  std::atomic<bool> done{false};
  std::mutex mu;  // guards the rest
  std::vector<txn::TxRecord> history;
  Ledger ledger;
  std::map<TxStatus, uint64_t> statuses;
  std::vector<std::string> errors;
  InvariantReport invariant;
  uint64_t remote_reads = 0, onesided_reads = 0;  // execution reads, summed over the drivers' services
};

class Driver final : public server::Service {
 public:
  Driver(txn::TxnServiceImpl& svc, Shared& s, int node) : svc_(svc), s_(s), node_(node) {
    txn::TxnOptions o = svc.options();
    o.record_history = true;
    o.validation_off = s.cfg.validation_off;
    o.local_backup_reads = s.cfg.local_backup_reads;
    svc.set_options(o);
  }

  size_t poll() override {
    if (stage_ == Stage::kWait && s_.go.load()) {
      // Claimed at go, not at construction: the drivers of a start retried with new ports never get here.
      index_ = s_.next_index++;
      checks_ = node_ == 0 && !s_.checker_claimed.exchange(true);
      rng_ = Rng(1000 + static_cast<uint64_t>(index_));
      stage_ = Stage::kLoading;
      ++active_;
      rpc::spawn(load());
    } else if (stage_ == Stage::kLoaded && s_.loaded.load() == s_.drivers) {
      stage_ = Stage::kRunning;
      for (int i = 0; i < s_.cfg.coroutines; ++i) {
        ++active_;
        rpc::spawn(run());
      }
    } else if (stage_ == Stage::kRunning && active_ == 0) {
      finish_run();
      stage_ = checks_ ? Stage::kChecking : Stage::kDone;
    } else if (stage_ == Stage::kChecking && s_.ran.load() == s_.drivers) {
      stage_ = Stage::kDone;
      ++active_;
      rpc::spawn(check());
    }
    // After its own run a worker still records what its participant's coordinator recovery writes (a recovery-abort
    // rewrite, for a coordinator that looked lost), which drivers still running may read: collected until the end.
    if ((stage_ == Stage::kChecking || stage_ == Stage::kDone) && !s_.done.load()) collect_history();
    return 0;
  }
  size_t inflight() const override { return static_cast<size_t>(active_); }

 private:
  enum class Stage { kWait, kLoading, kLoaded, kRunning, kChecking, kDone };

  void error(std::string e) {
    std::lock_guard<std::mutex> lk(s_.mu);
    s_.errors.push_back(std::move(e));
  }

  rpc::Task<void> load() {
    const uint64_t units = s_.workload->load_units();
    const uint64_t begin = units * index_ / s_.drivers, end = units * (index_ + 1) / s_.drivers;
    auto r = co_await load_units(svc_, *s_.workload, begin, end, s_.cfg.load);
    if (!r.is_ok()) error("load: " + r.status().to_string());
    stage_ = Stage::kLoaded;
    --active_;
    ++s_.loaded;
  }

  rpc::Task<void> run() {
    for (int i = 0; i < s_.cfg.attempts && !s_.stop_node[node_].load(); ++i) {
      TxOutcome o = co_await s_.workload->run_one(svc_, rng_, ledger_);
      ++statuses_[o.status];
      ++s_.attempts;
      if (o.status == TxStatus::kDataError) error(o.error);
    }
    --active_;
  }

  void collect_history() {
    std::vector<txn::TxRecord> h = svc_.take_history();
    if (h.empty()) return;
    std::lock_guard<std::mutex> lk(s_.mu);
    for (auto& r : h) s_.history.push_back(std::move(r));
  }

  void finish_run() {
    collect_history();
    std::lock_guard<std::mutex> lk(s_.mu);
    s_.ledger.merge(ledger_);
    for (auto [st, n] : statuses_) s_.statuses[st] += n;
    s_.remote_reads += svc_.counters().remote_reads;
    s_.onesided_reads += svc_.counters().onesided_reads;
    ++s_.ran_on_node[node_];
    ++s_.ran;
  }

  rpc::Task<void> check() {
    InvariantReport r = co_await s_.workload->check(svc_, s_.ledger);
    {
      std::lock_guard<std::mutex> lk(s_.mu);
      s_.invariant = std::move(r);
    }
    --active_;
    s_.done = true;
  }

  txn::TxnServiceImpl& svc_;
  Shared& s_;
  int node_;
  int index_ = 0;
  bool checks_ = false;
  Rng rng_{0};
  Ledger ledger_;
  std::map<TxStatus, uint64_t> statuses_;
  Stage stage_ = Stage::kWait;
  int active_ = 0;
};

struct RunResult {
  std::map<TxStatus, uint64_t> statuses;
  std::vector<std::string> errors;
  InvariantReport invariant;
  checker::CheckReport check;
};

RunResult run_on_cluster(const std::string& param, const RunConfig& cfg) {
  RunResult out;
  auto w = make_workload(cfg.workload);
  EXPECT_TRUE(w.is_ok()) << w.status().to_string();
  if (!w.is_ok()) return out;
  ClusterOptions o;
  const size_t plus = param.find('+');
  o.txn = param.substr(0, plus);
  if (plus != std::string::npos) o.primitives = param.substr(plus + 1);
  Shared shared;
  shared.workload = w->get();
  shared.cfg = cfg;
  // Every read at the primary, so the coordinators of the two backups read over the primitives under test (a local
  // backup copy would serve them, one-sided or not).
  if (o.primitives != "rpc") shared.cfg.local_backup_reads = false;
  shared.drivers = o.nodes * o.workers;
  TestCluster c(o, [&shared](int node, server::ServiceEnv& env) -> std::unique_ptr<server::Service> {
    return std::make_unique<Driver>(*env.txn, shared, node);
  });
  if (!c.start()) {
    ADD_FAILURE() << "the cluster did not become ready";
    return out;
  }
  shared.go = true;
  if (cfg.stop_backup) {
    const uint64_t third = uint64_t(shared.drivers) * cfg.coroutines * cfg.attempts / 3;
    EXPECT_TRUE(wait_for([&] { return shared.attempts.load() >= third; }, 120s));
    shared.stop_node[2] = true;
    EXPECT_TRUE(wait_for([&] { return shared.ran_on_node[2].load() == o.workers; }, 60s));  // its drivers finished
    c.stop(2);
  }
  EXPECT_TRUE(wait_for([&] { return shared.done.load(); }, 180s))
      << "the run did not finish: " << shared.loaded.load() << " of " << shared.drivers << " drivers loaded, "
      << shared.ran.load() << " ran";
  std::lock_guard<std::mutex> lk(shared.mu);
  out.statuses = shared.statuses;
  out.errors = shared.errors;
  out.invariant = shared.invariant;
  // A READ phase the parameter runs one-sided must have issued one-sided READs (the others' coordinators read the
  // primary's records), or the run tested the RPC path under another name.
  const txn::CcEntry* cc = txn::cc_protocols().find(o.txn);
  const uint32_t onesided = o.primitives == "onesided" ? cc->onesided_phases
                            : o.primitives == "hybrid" ? cc->hybrid_phases
                                                       : 0;
  if ((onesided & txn::phase_bit(txn::Phase::kRead)) != 0) {
    EXPECT_GT(shared.onesided_reads, 0u) << "of " << shared.remote_reads << " remote execution reads, "
                                         << shared.onesided_reads << " were one-sided";
  }
  auto report = checker::check_history(shared.history);
  EXPECT_TRUE(report.is_ok()) << report.status().to_string();
  if (report.is_ok()) out.check = std::move(report.value());
  if (!cfg.validation_off && !out.check.ok()) std::printf("%s", save_history(shared.history).c_str());
  return out;
}

void expect_clean(const RunResult& r, bool invariant) {
  for (const auto& e : r.errors) ADD_FAILURE() << e;
  EXPECT_GT(r.statuses.count(TxStatus::kCommitted) ? r.statuses.at(TxStatus::kCommitted) : 0, 0u);
  EXPECT_TRUE(r.check.ok()) << checker::format_report(r.check);
  EXPECT_GT(r.check.stats.committed, 0u);
  EXPECT_EQ(r.invariant.checked, invariant) << r.invariant.summary;
  EXPECT_TRUE(r.invariant.ok) << r.invariant.summary << "\n"
                              << fmt::format("{}", fmt::join(r.invariant.problems, "\n"));
  std::string counts;
  for (auto [s, n] : r.statuses) counts += fmt::format(" {}={}", tx_status_name(s), n);
  std::printf("statuses:%s\ninvariant: %s\n%s", counts.c_str(), r.invariant.summary.c_str(),
              checker::format_report(r.check).c_str());
}

class TxnConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(TxnConformance, ConflictingSmallBankIsStrictlySerializableAndKeepsTheBalance) {
  RunConfig cfg;
  cfg.workload = "smallbank:accounts=200,hot_percent=10";
  cfg.load.keys_per_txn = 8;  // a recorded load phase: the checker knows every initial version
  expect_clean(run_on_cluster(GetParam(), cfg), true);
}

TEST_P(TxnConformance, TatpKeepsReferentialIntegrity) {
  RunConfig cfg;
  cfg.workload = "tatp:subscribers=300,mix=20/10/20/10/10/15/15";  // more inserts/deletes than the standard mix
  expect_clean(run_on_cluster(GetParam(), cfg), true);
}

TEST_P(TxnConformance, TpccLiteKeepsItsConsistencyConditions) {
  RunConfig cfg;
  // Payments all write their warehouse's W_YTD (TPC-C's hot spot): enough warehouses that some commit.
  cfg.workload = "tpcc-lite:warehouses=12,districts=2,customers=10,items=100";
  cfg.coroutines = 4;
  cfg.attempts = 80;
  expect_clean(run_on_cluster(GetParam(), cfg), true);
}

TEST_P(TxnConformance, MicrobenchmarksAndYcsbAreStrictlySerializable) {
  for (const char* spec : {"o(4,2):keys=500", "o(1,0):keys=500", "ycsb-a:records=500", "ycsb-rcc:records=1000"}) {
    SCOPED_TRACE(spec);
    RunConfig cfg;
    cfg.workload = spec;
    cfg.attempts = 60;
    expect_clean(run_on_cluster(GetParam(), cfg), false);
  }
}

TEST_P(TxnConformance, NothingIsHalfAppliedWhenABackupStops) {
  RunConfig cfg;
  cfg.workload = "smallbank:accounts=200,hot_percent=10";
  cfg.load.keys_per_txn = 8;
  cfg.attempts = 300;
  cfg.stop_backup = true;
  expect_clean(run_on_cluster(GetParam(), cfg), true);
}

// The other side of the coin: with the commit-time checks of what transactions read switched off, the same machinery
// must find anomalies.
TEST_P(TxnConformance, CheckerCatchesAProtocolThatDoesNotCheckItsReads) {
  RunConfig cfg;
  // Two reads and one write on a few keys, the reads at the primaries: between a read and the commit's lock another
  // transaction often commits a write of the key read, which only the commit's read checks would notice.
  cfg.workload = "o(2,1):keys=30";
  cfg.attempts = 300;
  cfg.local_backup_reads = false;
  cfg.validation_off = true;
  RunResult r = run_on_cluster(GetParam(), cfg);
  // (The workload may also see impossible states, such as a key read as missing before the write that created it
  // was visible: committing such a read is exactly what the planted anomaly allows.)
  EXPECT_FALSE(r.check.ok()) << checker::format_report(r.check);
  std::printf("%s", checker::format_report(r.check).c_str());
  for (const auto& v : r.check.violations) EXPECT_FALSE(v.txns.empty()) << v.message;
}

// Every (protocol, primitives) pair the registry offers.
std::vector<std::string> protocols() {
  std::vector<std::string> out;
  for (const auto& e : txn::cc_protocols().entries()) {
    out.emplace_back(e.name);
    if (e.onesided_phases != 0) out.push_back(std::string(e.name) + "+onesided");
    if (e.hybrid_phases != 0 && e.hybrid_phases != e.onesided_phases) out.push_back(std::string(e.name) + "+hybrid");
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Registry, TxnConformance, ::testing::ValuesIn(protocols()), param_name);

}  // namespace
}  // namespace rdx::conformance
