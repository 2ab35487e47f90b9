// rdxd: the rdx node daemon. The composition root: the node's core (server/) with the services this binary plugs
// into it (the Redis endpoint, the benchmark service), and `--list`, which prints what each family registers.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/service.h"
#include "cluster/topology.h"
#include "common/parse_int.h"
#include "replication/replication.h"
#include "resp/resp_frontend.h"
#include "server/node.h"
#include "server/topology_follower.h"
#include "transport/transport.h"
#include "txn/cc.h"
#include "workload/workload.h"

namespace {

struct TestCrash {
  std::string node;
  rdx::txn::CrashPoint point = rdx::txn::CrashPoint::kNone;
  uint32_t after = 0;
};

// NODE:POINT:N (rdxd --test-crash).
rdx::Result<TestCrash> parse_test_crash(const std::string& spec) {
  const auto a = spec.find(':'), b = spec.rfind(':');
  const auto bad = [&] {
    return rdx::Status(
        rdx::Code::kInvalidArgument,
        "want NODE:POINT:N with POINT after-lock, after-replicate or mid-unlock and N >= 1, got '" + spec + "'");
  };
  if (a == std::string::npos || a == b || a == 0) return bad();
  TestCrash c{spec.substr(0, a)};
  const std::string point = spec.substr(a + 1, b - a - 1);
  if (point == "after-lock") c.point = rdx::txn::CrashPoint::kAfterLock;
  if (point == "after-replicate") c.point = rdx::txn::CrashPoint::kAfterReplicate;
  if (point == "mid-unlock") c.point = rdx::txn::CrashPoint::kMidUnlock;
  int64_t n = 0;
  if (c.point == rdx::txn::CrashPoint::kNone || !rdx::parse_int64(spec.substr(b + 1), &n) || n < 1 || n > 1000000000)
    return bad();
  c.after = static_cast<uint32_t>(n);
  return c;
}

const char* survives_name(rdx::replication::Survives s) {
  switch (s) {
    case rdx::replication::Survives::kNoLoss:
      return "no-loss";
    case rdx::replication::Survives::kBackupLoss:
      return "backup-loss";
    case rdx::replication::Survives::kMinority:
      return "minority";
  }
  return "?";
}

// What this build implements, per family (the operator's admission lists are checked against it in a test).
nlohmann::json registered() {
  using nlohmann::json;
  json out;
  json transports = json::array();
  for (const auto& e : rdx::transport::transports().entries())
    transports.push_back({{"name", e.name}, {"summary", e.summary}});
  out["transport"] = transports;
  json reps = json::array();
  for (const auto& e : rdx::replication::replication_protocols().entries())
    reps.push_back({{"name", e.name},
                    {"messages", {e.msgs.first, e.msgs.last()}},
                    {"carries_transactions", e.carries_transactions},
                    {"ops", e.ops == rdx::replication::Ops::kReadWrite ? "read-write" : "read-modify-write"},
                    {"reads", e.reads == rdx::replication::Reads::kLinearizable ? "linearizable" : "sequential"},
                    {"complete_feed", e.complete_feed},
                    {"survives", survives_name(e.survives)},
                    {"summary", e.summary}});
  out["replication"] = reps;
  json ccs = json::array();
  for (const auto& e : rdx::txn::cc_protocols().entries()) {
    json prims = json::array({"rpc"});
    if (e.onesided_phases != 0) prims.push_back("onesided");
    if (e.hybrid_phases != 0) prims.push_back("hybrid");
    ccs.push_back({{"name", e.name},
                   {"messages", {e.msgs.first, e.msgs.last()}},
                   {"primitives", prims},
                   {"onesided_phases", rdx::txn::phase_names(e.onesided_phases)},
                   {"hybrid_phases", rdx::txn::phase_names(e.hybrid_phases)},
                   {"summary", e.summary}});
  }
  out["txn"] = ccs;
  json workloads = json::array();
  for (const auto& e : rdx::workload::workloads().entries())
    workloads.push_back({{"name", e.name}, {"summary", e.summary}});
  out["workload"] = workloads;
  return out;
}

void print_registered(bool as_json) {
  nlohmann::json r = registered();
  if (as_json) {
    std::printf("%s\n", r.dump(2).c_str());
    return;
  }
  for (const auto& [family, entries] : r.items()) {
    std::printf("%s:\n", family.c_str());
    for (const auto& e : entries) {
      std::string line = "  " + e["name"].get<std::string>();
      if (e.contains("primitives")) line += "  [primitives: " + e["primitives"].dump() + "]";
      if (e.contains("onesided_phases") && !e["onesided_phases"].empty())
        line += "  [one-sided phases: " + e["onesided_phases"].dump() + "]";
      if (e.contains("summary")) line += "  " + e["summary"].get<std::string>();
      std::printf("%s\n", line.c_str());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdxd: the rdx node daemon (one replica of one shard)"};
  std::string config, node_name, listen = "0.0.0.0", log_level = "info";
  bool busy_poll = false, list = false, list_json = false;
  std::vector<std::string> test_faults;
  auto* config_opt = app.add_option("--config", config, "topology file (JSON; see engine/docs/topology.md)");
  app.add_option("--node", node_name, "this node's name in the topology (default: $RDX_NODE, else the hostname)");
  app.add_option("--listen", listen, "address the transport, Redis and HTTP listeners bind to");
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  app.add_flag("--busy-poll", busy_poll, "workers never sleep (lowest latency; one core per worker)");
  app.add_flag("--list", list, "print the transports, protocols and workloads this build implements, and exit");
  app.add_flag("--json", list_json, "with --list: as JSON");
  std::string test_partition;
  app.add_option("--test-partition", test_partition,
                 "A,B: tests only: on SIGUSR1, node A drops every message from B and sends it none, and B likewise "
                 "(a network partition between them; SIGUSR1 again heals it); other nodes ignore it. A>B: only A's "
                 "own links to B are cut (A sends B no request, as if it could not connect to B; B's requests to A "
                 "are still answered)");
  std::string test_crash;
  app.add_option("--test-crash", test_crash,
                 "NODE:POINT:N: tests only: node NODE kills its own process (SIGKILL) as the coordinator of the N-th "
                 "transaction of a worker that locks at two or more nodes, at POINT: after-lock, after-replicate or "
                 "mid-unlock (one participant released); other nodes ignore it");
  app.add_option("--test-fault", test_faults,
                 "plant a known bug, for tests that show their checks catch it (never in production): "
                 "reads-without-lease (backups read their copy without holding leases), ack-before-replication "
                 "(single-key writes are acknowledged before the backups have them), unilateral-exclusion (a node "
                 "excludes a replica without the others agreeing), recovery-always-aborts (coordinator recovery aborts "
                 "transactions it must commit)")
      ->check(CLI::IsMember(
          {"reads-without-lease", "ack-before-replication", "unilateral-exclusion", "recovery-always-aborts"}));
  CLI11_PARSE(app, argc, argv);
  if (list) {
    print_registered(list_json);
    return 0;
  }
  if (config_opt->count() == 0) {
    std::fprintf(stderr, "rdxd: --config is required (or --list)\n");
    return 2;
  }

  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  if (node_name.empty()) {
    if (const char* env = std::getenv("RDX_NODE"); env != nullptr && *env != '\0') {
      node_name = env;
    } else {
      char host[256] = {};
      gethostname(host, sizeof(host) - 1);
      node_name = host;
    }
  }

  // Signals are handled synchronously by this thread; every other thread inherits the blocked mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto topology_text = rdx::cluster::read_topology_file(config);
  auto topo = topology_text ? rdx::cluster::parse_topology_file(config, topology_text.value())
                            : rdx::Result<rdx::cluster::Topology>(topology_text.status());
  if (!topo) {
    spdlog::error("rdxd: invalid configuration: {}", topo.status().message());
    return 2;
  }
  rdx::server::NodeOptions opts;
  opts.node_name = node_name;
  opts.listen_host = listen;
  opts.http_host = listen;
  opts.busy_poll = busy_poll;
  for (const std::string& f : test_faults) {
    if (f == "reads-without-lease") opts.faults.reads_without_lease = true;
    if (f == "ack-before-replication") opts.faults.ack_before_replication = true;
    if (f == "unilateral-exclusion") opts.faults.unilateral_exclusion = true;
    if (f == "recovery-always-aborts") opts.txn_faults.recovery_always_aborts = true;
    spdlog::warn("rdxd: test fault planted: {}", f);
  }
  if (!test_crash.empty()) {
    auto crash = parse_test_crash(test_crash);
    if (!crash) {
      spdlog::error("rdxd: --test-crash: {}", crash.status().message());
      return 2;
    }
    if (crash.value().node == node_name) {
      opts.txn_faults.crash_point = crash.value().point;
      opts.txn_faults.crash_after = crash.value().after;
      spdlog::warn("rdxd: test crash planted: {}", test_crash);
    }
  }
  if (auto comma = test_partition.find(','); comma != std::string::npos) {
    const std::string a = test_partition.substr(0, comma), b = test_partition.substr(comma + 1);
    if (node_name == a || node_name == b) opts.test_partition_peer = node_name == a ? b : a;
  } else if (auto arrow = test_partition.find('>'); arrow != std::string::npos) {
    if (node_name == test_partition.substr(0, arrow)) {
      opts.test_partition_peer = test_partition.substr(arrow + 1);
      opts.test_partition_one_way = true;
    }
  } else if (!test_partition.empty()) {
    spdlog::error("rdxd: --test-partition wants two node names, A,B or A>B");
    return 2;
  }
  auto node = rdx::server::Node::create(std::move(topo.value()), opts);
  if (!node) {
    spdlog::error("rdxd: {}", node.status().message());
    return 2;
  }
  node.value()->set_topology_text(topology_text.value());
  node.value()->add_service(rdx::resp::make_resp_service);
  node.value()->add_service(rdx::bench::make_bench_service);
  if (auto st = node.value()->start(); !st.is_ok()) {
    spdlog::error("rdxd: failed to start: {}", st.to_string());
    return 1;
  }
  // Signals; a peer's newer topology every 100 ms, the file every second: a membership epoch is applied live.
  rdx::server::TopologyFollower follower(*node.value(), config);
  const timespec every{0, 100'000'000};
  for (int round = 1;; ++round) {
    const int sig = sigtimedwait(&set, nullptr, &every);
    if (sig == SIGUSR1) {
      node.value()->toggle_test_partition();
    } else if (sig > 0) {
      spdlog::info("rdxd: signal {} received, stopping", sig);
      // A primary hands its shard over first (a pod's grace period is 30 s by default; this takes about a second).
      if (node.value()->hand_over(std::chrono::seconds(5))) spdlog::info("rdxd: handed the shard over");
      break;
    } else if (follower.poll(round % 10 == 0) == rdx::server::TopologyFollower::Outcome::kRemoved) {
      spdlog::info("rdxd: removed from the cluster, stopping");
      break;
    }
  }
  node.value()->stop();
  spdlog::info("rdxd: stopped");
  return 0;
}
