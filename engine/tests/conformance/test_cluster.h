#pragma once
// An in-process cluster of real rdxd nodes (TCP on loopback) for the family conformance suites: each node runs the
// protocols the suite names, and each worker of each node hosts a driver (a server::Service the test provides) that
// issues operations from the worker's own thread, as the Redis endpoint does.
// $RDX_TEST_FAILURE_DETECTION (a topology failure_detection object, e.g. '{"heartbeat_ms":10,"timeout_ms":60}') sets
// the clusters' failure detection: short timeouts make nodes suspect each other under load, which reproduces
// failover faults (spurious elections, exclusions, rejoins) in any suite.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/node.h"
#include "txn/history.h"

namespace rdx::conformance {

struct ClusterOptions {
  std::string replication = "primary-backup";
  std::string txn = "dnl4";
  std::string primitives = "rpc";  // transport.primitives of the transaction protocol
  int nodes = 3;                   // split evenly into `shards` shards, in order; each shard's first is its primary
  int shards = 1;
  int workers = 2;
  replication::TestFaults faults;
};

class TestCluster {
 public:
  // `driver` is called on every worker thread of every node as it starts (node index, then the service env).
  using Driver = std::function<std::unique_ptr<server::Service>(int node, server::ServiceEnv& env)>;
  TestCluster(ClusterOptions o, Driver driver);
  ~TestCluster();

  // Creates and starts every node and waits until all are ready; false (with the nodes' readiness details)
  // otherwise. node(i) exists from here on.
  ::testing::AssertionResult start(std::chrono::seconds timeout = std::chrono::seconds(30));
  // Stops node i the way SIGTERM does (its drivers stop first); its peers see it go.
  void stop(int i);
  server::Node& node(int i) { return *nodes_[i]; }
  int size() const { return static_cast<int>(nodes_.size()); }
  const ClusterOptions& options() const { return o_; }

 private:
  Status create_and_start();

  ClusterOptions o_;
  Driver driver_;
  std::vector<std::unique_ptr<server::Node>> nodes_;
};

// The cluster a replication protocol runs in: without a transaction protocol when it carries none.
ClusterOptions replication_options(const std::string& protocol);

// Polls `pred` every 10 ms until it holds or `timeout` passes.
bool wait_for(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

// CLOCK_REALTIME in ns (history intervals).
int64_t now_ns();

// Writes a history that failed its check to a file named after the running test (under the test temp dir) and
// returns a line naming it: `rdx-check <file>` reproduces the verdict.
std::string save_history(const std::vector<txn::TxRecord>& history);

// A registered protocol's name as a gtest parameter name ("primary-backup" -> "primary_backup").
std::string param_name(const ::testing::TestParamInfo<std::string>& p);

}  // namespace rdx::conformance
