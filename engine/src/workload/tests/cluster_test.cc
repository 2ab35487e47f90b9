// The workloads against the real transaction layer: a 3-node, 3-replica cluster of rdxd nodes in this process (TCP
// on loopback). Every worker of every node drives the workload through the worker hook rdxd offers its front end:
// load its share of the data, run transactions from several coroutines, record the history; then one worker runs
// the invariant check and the history goes through the strict-serializability checker.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "checker/checker.h"
#include "common/net.h"
#include "server/node.h"
#include "workload/bulk.h"
#include "workload/workload.h"

namespace rdx::workload {
namespace {

using namespace std::chrono_literals;

struct RunConfig {
  std::string workload;
  std::string protocol = "dnl4";
  LoadOptions load;
  int coroutines = 8;           // per worker
  int attempts = 150;           // per coroutine
  bool validation_off = false;  // the transaction layer's test-only switch: a protocol that is not serializable
};

// What the drivers share with the test thread.
struct Shared {
  const Workload* workload = nullptr;
  RunConfig cfg;
  int drivers = 0;
  std::atomic<int> next_index{0};
  std::atomic<bool> go{false};
  std::atomic<int> loaded{0}, ran{0};
  std::atomic<bool> done{false};
  std::mutex mu;  // guards the rest
  std::vector<txn::TxRecord> history;
  Ledger ledger;
  std::map<TxStatus, uint64_t> statuses;
  std::vector<std::string> errors;
  InvariantReport invariant;
};

class Driver final : public server::Frontend {
 public:
  Driver(txn::TxnService& svc, Shared& s) : svc_(svc), s_(s), index_(s.next_index++), rng_(1000 + index_) {
    auto& impl = dynamic_cast<txn::TxnServiceImpl&>(svc);
    txn::TxnConfig c = impl.config();
    c.record_history = true;
    c.validation_off = s.cfg.validation_off;
    impl.set_config(c);
  }

  size_t poll() override {
    if (stage_ == Stage::kWait && s_.go.load()) {
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
      stage_ = index_ == 0 ? Stage::kChecking : Stage::kDone;
    } else if (stage_ == Stage::kChecking && s_.ran.load() == s_.drivers) {
      stage_ = Stage::kDone;
      ++active_;
      rpc::spawn(check());
    }
    return 0;
  }
  int wait_fd() const override { return -1; }
  void stop_accepting() override {}
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
    for (int i = 0; i < s_.cfg.attempts; ++i) {
      TxOutcome o = co_await s_.workload->run_one(svc_, rng_, ledger_);
      ++statuses_[o.status];
      if (o.status == TxStatus::kDataError) error(o.error);
    }
    --active_;
  }

  void finish_run() {
    auto& impl = dynamic_cast<txn::TxnServiceImpl&>(svc_);
    std::vector<txn::TxRecord> h = impl.take_history();
    std::lock_guard<std::mutex> lk(s_.mu);
    for (auto& r : h) s_.history.push_back(std::move(r));
    s_.ledger.merge(ledger_);
    for (auto [st, n] : statuses_) s_.statuses[st] += n;
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

  txn::TxnService& svc_;
  Shared& s_;
  int index_;
  Rng rng_;
  Ledger ledger_;
  std::map<TxStatus, uint64_t> statuses_;
  Stage stage_ = Stage::kWait;
  int active_ = 0;
};

uint16_t free_port() {
  uint16_t port = 0;
  auto fd = net::listen_tcp("127.0.0.1", &port);
  EXPECT_TRUE(fd.is_ok());
  return port;  // closed again when fd goes out of scope; the node binds it right after
}

std::string topology_json(const std::string& protocol, int workers) {
  std::string nodes;
  for (int i = 0; i < 3; ++i) {
    nodes += fmt::format(R"({}{{"name":"n{}","host":"127.0.0.1","rdma_addr":"","port":{},"redis_port":{},)"
                         R"("http_port":{},"role":"data"}})",
                         i ? "," : "", i, free_port(), free_port(), free_port());
  }
  return fmt::format(
      R"({{"cluster":"wl","epoch":1,"transport":{{"kind":"tcp","primitives":"hybrid","device":"","gid_index":-1,)"
      R"("rdma_interface":"","hugepages":false,"batching":{{"enabled":true,"max_bytes":4096,"max_messages":64}}}},)"
      R"("workers":{},"replication":{{"protocol":"primary-backup"}},)"
      R"("txn":{{"protocol":"{}","local_backup_reads":true,"ht_batching":true}},"auth":{{"password_file":""}},)"
      R"("shards":[{{"id":0,"members":["n0","n1","n2"]}}],"nodes":[{}]}})",
      workers, protocol, nodes);
}

struct RunResult {
  std::map<TxStatus, uint64_t> statuses;
  std::vector<std::string> errors;
  InvariantReport invariant;
  checker::CheckReport check;
};

RunResult run_on_cluster(const RunConfig& cfg) {
  RunResult out;
  auto w = make_workload(cfg.workload);
  EXPECT_TRUE(w.is_ok()) << w.status().to_string();
  if (!w.is_ok()) return out;
  const int workers = 2;
  Shared shared;
  shared.workload = w->get();
  shared.cfg = cfg;
  shared.drivers = 3 * workers;
  auto topo = server::parse_topology(topology_json(cfg.protocol, workers));
  EXPECT_TRUE(topo.is_ok()) << topo.status().to_string();
  if (!topo.is_ok()) return out;
  std::vector<std::unique_ptr<server::Node>> nodes;
  for (int i = 0; i < 3; ++i) {
    server::NodeOptions o;
    o.node_name = fmt::format("n{}", i);
    o.listen_host = o.http_host = "127.0.0.1";
    auto n = server::Node::create(*topo, o);
    EXPECT_TRUE(n.is_ok()) << n.status().to_string();
    if (!n.is_ok()) return out;
    n.value()->set_frontend_factory([&shared](server::FrontendEnv env) -> Result<std::unique_ptr<server::Frontend>> {
      return std::unique_ptr<server::Frontend>(std::make_unique<Driver>(*env.txn, shared));
    });
    nodes.push_back(std::move(n.value()));
  }
  for (auto& n : nodes) EXPECT_TRUE(n->start().is_ok());
  auto all_ready = [&] {
    for (auto& n : nodes) {
      if (!n->ready()) return false;
    }
    return true;
  };
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!all_ready() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  if (all_ready()) {
    shared.go = true;
    deadline = std::chrono::steady_clock::now() + 120s;
    while (!shared.done.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
    EXPECT_TRUE(shared.done.load()) << "the run did not finish in 120 s: " << shared.loaded.load() << " of "
                                    << shared.drivers << " drivers loaded, " << shared.ran.load() << " ran";
  } else {
    std::string detail;
    for (auto& n : nodes) detail += n->readiness_detail();
    ADD_FAILURE() << "the cluster did not become ready in 30 s:\n" << detail;
  }
  for (auto& n : nodes) n->stop();
  std::lock_guard<std::mutex> lk(shared.mu);
  out.statuses = shared.statuses;
  out.errors = shared.errors;
  out.invariant = shared.invariant;
  auto report = checker::check_history(shared.history);
  EXPECT_TRUE(report.is_ok()) << report.status().to_string();
  if (report.is_ok()) out.check = std::move(report.value());
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

TEST(WorkloadCluster, SmallBankOnEveryProtocolKeepsBalanceAndHistory) {
  for (const char* protocol : {"dnl4", "dnl2", "dnl1"}) {
    SCOPED_TRACE(protocol);
    RunConfig cfg;
    cfg.workload = "smallbank:accounts=200,hot_percent=10";
    cfg.protocol = protocol;
    cfg.load.keys_per_txn = 8;  // a recorded load phase: the checker knows every initial version
    expect_clean(run_on_cluster(cfg), true);
  }
}

TEST(WorkloadCluster, TatpKeepsReferentialIntegrity) {
  RunConfig cfg;
  cfg.workload = "tatp:subscribers=300,mix=20/10/20/10/10/15/15";  // more inserts/deletes than the standard mix
  expect_clean(run_on_cluster(cfg), true);
}

TEST(WorkloadCluster, MicrobenchmarksAndYcsbRun) {
  for (const char* spec : {"o(4,2):keys=500", "o(1,0):keys=500", "ycsb-a:records=500", "ycsb-f:records=500,ops=2"}) {
    SCOPED_TRACE(spec);
    RunConfig cfg;
    cfg.workload = spec;
    cfg.attempts = 60;
    expect_clean(run_on_cluster(cfg), false);
  }
}

// The other side of the coin: with read validation switched off the same machinery must find anomalies.
TEST(WorkloadCluster, CheckerCatchesAProtocolWithoutReadValidation) {
  RunConfig cfg;
  cfg.workload = "o(4,2):keys=40";  // two of the four keys read are not written: only validation protects them
  cfg.validation_off = true;
  RunResult r = run_on_cluster(cfg);
  for (const auto& e : r.errors) ADD_FAILURE() << e;
  EXPECT_FALSE(r.check.ok()) << checker::format_report(r.check);
  std::printf("%s", checker::format_report(r.check).c_str());
  for (const auto& v : r.check.violations) EXPECT_FALSE(v.txns.empty()) << v.message;
}

}  // namespace
}  // namespace rdx::workload
