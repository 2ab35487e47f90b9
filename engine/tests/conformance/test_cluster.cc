#include "test_cluster.h"

#include <time.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "checker/history_io.h"
#include "common/net.h"
#include "replication/replication.h"

namespace rdx::conformance {

using namespace std::chrono_literals;

namespace {
uint16_t free_port() {
  uint16_t port = 0;
  auto fd = net::listen_tcp("127.0.0.1", &port);
  EXPECT_TRUE(fd.is_ok());
  return port;  // closed again when fd goes out of scope; the node binds it right after
}

// $RDX_TEST_FAILURE_DETECTION (test_cluster.h), validated by the topology parser like any topology field.
std::string failure_detection_override() {
  const char* fd = std::getenv("RDX_TEST_FAILURE_DETECTION");
  return fd != nullptr && *fd != '\0' ? fmt::format(R"("failure_detection":{},)", fd) : std::string();
}

std::string topology_json(const ClusterOptions& o) {
  std::string nodes, shards;
  for (int i = 0; i < o.nodes; ++i)
    nodes += fmt::format(R"({}{{"name":"n{}","host":"127.0.0.1","port":{},"redis_port":0,"http_port":{}}})",
                         i ? "," : "", i, free_port(), free_port());
  const int per_shard = o.nodes / o.shards;
  for (int s = 0; s < o.shards; ++s) {
    std::string members;
    for (int i = s * per_shard; i < (s + 1) * per_shard; ++i)
      members += fmt::format(R"({}"n{}")", members.empty() ? "" : ",", i);
    shards += fmt::format(R"({}{{"id":{},"members":[{}]}})", s ? "," : "", s, members);
  }
  return fmt::format(
      R"({{"cluster":"conformance","epoch":1,"transport":{{"kind":"tcp","hugepages":false,"primitives":"{}"}},)"
      R"("workers":{},"memory_mb":64,"replication":{{"protocol":"{}"}},"txn":{{"protocol":"{}"}},)"
      R"({}"shards":[{}],"nodes":[{}]}})",
      o.primitives, o.workers, o.replication, o.txn, failure_detection_override(), shards, nodes);
}
}  // namespace

ClusterOptions replication_options(const std::string& protocol) {
  ClusterOptions o;
  o.replication = protocol;
  if (!replication::replication_protocols().find(protocol)->carries_transactions)
    o.txn = std::string(cluster::kNoTxnProtocol);
  return o;
}

TestCluster::TestCluster(ClusterOptions o, Driver driver) : o_(std::move(o)), driver_(std::move(driver)) {}

TestCluster::~TestCluster() {
  // All at once: a node stopped after its peers saw another go would first elect, exclude and re-copy (seconds).
  std::vector<std::thread> stopping;
  for (auto& n : nodes_) stopping.emplace_back([&n] { n->stop(); });
  for (auto& t : stopping) t.join();
}

// One attempt with freshly picked ports. A port is free when picked and bound by its node a moment later; in
// between another process may take it (a parallel test's listener, or the ephemeral port of an outgoing
// connection): the bind then fails with kAlreadyExists.
Status TestCluster::create_and_start() {
  nodes_.clear();
  auto topo = cluster::parse_topology(topology_json(o_));
  if (!topo.is_ok()) return topo.status();
  for (int i = 0; i < o_.nodes; ++i) {
    server::NodeOptions no;
    no.node_name = fmt::format("n{}", i);
    no.listen_host = no.http_host = "127.0.0.1";
    no.faults = o_.faults;
    auto n = server::Node::create(*topo, no);
    if (!n.is_ok()) return n.status();
    n.value()->add_service([driver = driver_, i](server::ServiceEnv& env) -> Result<std::unique_ptr<server::Service>> {
      return driver(i, env);
    });
    nodes_.push_back(std::move(n.value()));
  }
  for (auto& n : nodes_) RDX_RETURN_IF_ERROR(n->start());
  return Status::ok();
}

::testing::AssertionResult TestCluster::start(std::chrono::seconds timeout) {
  constexpr int kPortAttempts = 5;
  Status st;
  for (int attempt = 1; attempt <= kPortAttempts; ++attempt) {
    st = create_and_start();
    if (st.is_ok() || st.code() != Code::kAlreadyExists) break;  // the next attempt's clear() stops these nodes
    if (attempt < kPortAttempts)
      std::fprintf(stderr, "test cluster: a picked port was taken meanwhile (%s); attempt %d of %d with new ports\n",
                   st.to_string().c_str(), attempt + 1, kPortAttempts);
  }
  if (!st.is_ok()) return ::testing::AssertionFailure() << st.to_string();
  bool ready = wait_for(
      [&] {
        for (auto& n : nodes_)
          if (!n->ready()) return false;
        return true;
      },
      timeout);
  if (ready) return ::testing::AssertionSuccess();
  std::string detail;
  for (auto& n : nodes_) detail += n->readiness_detail();
  return ::testing::AssertionFailure() << "the cluster did not become ready:\n" << detail;
}

void TestCluster::stop(int i) { nodes_[i]->stop(); }

bool wait_for(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

std::string save_history(const std::vector<txn::TxRecord>& history) {
  const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = t != nullptr ? fmt::format("{}.{}", t->test_suite_name(), t->name()) : "history";
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.') ch = '_';
  const std::string path = fmt::format("{}rdx-{}-{}.history", ::testing::TempDir(), name, ::getpid());
  std::ofstream out(path);
  checker::HistoryWriter w(out);
  for (const auto& r : history) w.write(r);
  out.flush();
  return w.ok() ? fmt::format("history saved: rdx-check {}\n", path) : fmt::format("could not write {}\n", path);
}

std::string param_name(const ::testing::TestParamInfo<std::string>& p) {
  std::string s = p.param;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace rdx::conformance
