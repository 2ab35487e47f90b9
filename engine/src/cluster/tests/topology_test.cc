#include "cluster/topology.h"

#include <gtest/gtest.h>

#include <fstream>

namespace rdx::cluster {
namespace {

const char* kGood = R"({
  "cluster": "demo", "epoch": 3,
  "transport": {"kind": "tcp", "batching": {"enabled": true, "max_bytes": 2048, "max_messages": 32}},
  "workers": 2, "memory_mb": 64,
  "replication": {"protocol": "primary-backup"},
  "failure_detection": {"heartbeat_ms": 20, "timeout_ms": 200},
  "shards": [{"id": 0, "members": ["n0", "n1", "n2"]}, {"id": 1, "members": ["n3"]}],
  "nodes": [
    {"name": "n0", "host": "127.0.0.1", "port": 7001, "http_port": 9101, "redis_port": 0},
    {"name": "n1", "host": "127.0.0.1", "port": 7002},
    {"name": "n2", "host": "127.0.0.1", "port": 7003},
    {"name": "n3", "host": "127.0.0.1", "port": 7004, "rdma_addr": "10.99.1.1"}
  ]
})";

TEST(Topology, ParsesAValidFile) {
  auto t = parse_topology(kGood);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->cluster, "demo");
  EXPECT_EQ(t->epoch, 3u);
  EXPECT_EQ(t->batch_max_bytes, 2048u);
  ASSERT_EQ(t->shards.size(), 2u);
  EXPECT_EQ(t->initial_primary(0), 0);
  EXPECT_EQ(t->nodes[2].shard, 0);
  EXPECT_EQ(t->nodes[3].shard, 1);
  EXPECT_EQ(t->nodes[1].http_port, 9100);  // default
  EXPECT_EQ(t->nodes[3].rdma_addr, "10.99.1.1");
  EXPECT_TRUE(t->failure.enabled);  // default
  EXPECT_EQ(t->failure.heartbeat_ms, 20u);
  EXPECT_EQ(t->failure.timeout_ms, 200u);
  // Keys spread over both shards.
  int counts[2] = {0, 0};
  for (int i = 0; i < 1000; ++i) ++counts[t->shard_of_key("key" + std::to_string(i))];
  EXPECT_GT(counts[0], 400);
  EXPECT_GT(counts[1], 400);
  // Hash tags (Redis Cluster's): keys that share one share a shard; tags spread too; no tag, no grouping.
  int tagged[2] = {0, 0};
  for (int w = 0; w < 200; ++w) {
    const std::string tag = "{w" + std::to_string(w) + "}";
    const uint32_t s = t->shard_of_key("tc:" + tag + ":d:1");
    EXPECT_EQ(t->shard_of_key("tc:" + tag + ":c:7:x"), s);
    EXPECT_EQ(t->shard_of_key(tag), s);
    ++tagged[s];
  }
  EXPECT_GT(tagged[0], 60);
  EXPECT_GT(tagged[1], 60);
  int empty_tag[2] = {0, 0};
  for (int i = 0; i < 200; ++i) ++empty_tag[t->shard_of_key("{}" + std::to_string(i))];  // empty: no tag
  EXPECT_GT(empty_tag[0], 60);
  EXPECT_GT(empty_tag[1], 60);
  int unclosed[2] = {0, 0};
  for (int i = 0; i < 200; ++i) ++unclosed[t->shard_of_key("{w" + std::to_string(i))];  // unclosed: no tag
  EXPECT_GT(unclosed[0], 60);
  EXPECT_GT(unclosed[1], 60);
}

struct BadCase {
  const char* name;
  std::string from, to;  // textual replacement applied to kGood
  const char* expect;    // substring of the error
};

TEST(Topology, RejectsBadInputWithAClearMessage) {
  const BadCase cases[] = {
      {"not json", "{", "{{{", "not valid JSON"},
      {"unknown field", R"("workers": 2)", R"("workers": 2, "wrokers": 3)", "unknown field 'wrokers'"},
      {"unknown transport", R"("kind": "tcp")", R"("kind": "infiniband")", "'infiniband' is not one of: tcp, verbs"},
      {"bad cluster name", R"("cluster": "demo")", R"("cluster": "Demo_1")", "must be a DNS label"},
      {"epoch missing", R"("epoch": 3,)", "", "epoch: required field is missing"},
      {"epoch zero", R"("epoch": 3)", R"("epoch": 0)", "out of range"},
      {"port range", R"("port": 7001)", R"("port": 70000)", "nodes[0].port: 70000 is out of range"},
      {"port type", R"("port": 7001)", R"("port": "7001")", "nodes[0].port: must be an integer"},
      {"duplicate node", R"("name": "n1")", R"("name": "n0")", "duplicate node name 'n0'"},
      {"unknown member", R"(["n3"])", R"(["n9"])", "unknown node 'n9'"},
      {"node in two shards", R"(["n3"])", R"(["n2", "n3"])", "already a member of shard 0"},
      {"orphan data node", R"(["n3"])", R"([])", "members: must be an array of 1..7"},
      {"shard ids out of order", R"({"id": 1, "members")", R"({"id": 5, "members")", "shard ids must be 0..N-1"},
      {"bad rdma addr", R"("10.99.1.1")", R"("10.99.1")", "is not an IPv4 address"},
      {"workers range", R"("workers": 2)", R"("workers": 0)", "workers: 0 is out of range 1..64"},
      {"batch bytes", R"("max_bytes": 2048)", R"("max_bytes": 16)", "max_bytes: 16 is out of range"},
      {"bad role", R"("port": 7002})", R"("port": 7002, "role": "leader"})", "'leader' is not one of: data, ro, proxy"},
      {"failure typo", R"("timeout_ms": 200)", R"("timeout": 200)", "failure_detection: unknown field 'timeout'"},
      {"failure enabled type", R"("heartbeat_ms": 20,)", R"("enabled": "yes",)", "enabled: must be true or false"},
      {"timeout below heartbeats", R"("timeout_ms": 200)", R"("timeout_ms": 60)", "must be at least 4 heartbeats"},
      {"heartbeat range", R"("heartbeat_ms": 20)", R"("heartbeat_ms": 0)", "heartbeat_ms: 0 is out of range"},
      {"nodes not array", R"("nodes": [)", R"("nodes": {"x": 1}, "unused": [)", "unknown field 'unused'"},
  };
  for (const BadCase& c : cases) {
    std::string text = kGood;
    size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.name;
    text.replace(at, c.from.size(), c.to);
    auto t = parse_topology(text);
    ASSERT_FALSE(t.is_ok()) << c.name;
    EXPECT_EQ(t.status().code(), Code::kInvalidArgument) << c.name;
    EXPECT_NE(t.status().message().find(c.expect), std::string::npos)
        << c.name << ": got '" << t.status().message() << "'";
  }
}

TEST(Topology, LoadReportsUnreadableFiles) {
  auto t = load_topology("/nonexistent/topology.json");
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find("cannot read"), std::string::npos);
  std::string path = ::testing::TempDir() + "/bad-topology.json";
  std::ofstream(path) << "[1, 2, 3]";
  t = load_topology(path);
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find(path), std::string::npos);
}

}  // namespace
}  // namespace rdx::cluster
