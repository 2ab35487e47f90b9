// What a node refuses before it starts: protocols and primitives this build does not implement, combinations the
// families-and-keys rule forbids, and message ranges that collide.
#include "server/node.h"

#include <gtest/gtest.h>

namespace rdx::server {
namespace {

cluster::Topology topology(const std::string& replication, const std::string& txn, const std::string& primitives) {
  auto t = cluster::parse_topology(R"({"cluster": "t", "epoch": 1,
    "transport": {"kind": "tcp", "primitives": ")" +
                                   primitives + R"("},
    "replication": {"protocol": ")" +
                                   replication + R"("}, "txn": {"protocol": ")" + txn + R"("},
    "shards": [{"id": 0, "members": ["n0"]}], "nodes": [{"name": "n0", "host": "127.0.0.1", "port": 7001}]})");
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return t.value();
}

Status create(const cluster::Topology& t) {
  NodeOptions o;
  o.node_name = "n0";
  return Node::create(t, o).status();
}

TEST(Node, RefusesProtocolsThisBuildDoesNotImplementNamingTheOnesItHas) {
  EXPECT_TRUE(create(topology("primary-backup", "dnl4", "rpc")).is_ok());
  Status rep = create(topology("zab", "dnl4", "rpc"));
  EXPECT_EQ(rep.code(), Code::kUnsupported);
  EXPECT_NE(rep.message().find("replication protocol 'zab' is not implemented"), std::string::npos) << rep.message();
  EXPECT_NE(rep.message().find("primary-backup"), std::string::npos) << rep.message();
  Status cc = create(topology("primary-backup", "mvcc", "rpc"));
  EXPECT_EQ(cc.code(), Code::kUnsupported);
  EXPECT_NE(cc.message().find("dnl4, dnl2, dnl1"), std::string::npos) << cc.message();
}

TEST(Node, AcceptsThePrimitivesAProtocolHonours) {
  for (const char* p : {"rpc", "onesided", "hybrid"})
    EXPECT_TRUE(create(topology("primary-backup", "occ", p)).is_ok()) << p;
}

TEST(Node, RefusesPrimitivesTheProtocolDoesNotHonour) {
  for (const char* p : {"onesided", "hybrid"}) {
    Status st = create(topology("primary-backup", "dnl2", p));
    EXPECT_EQ(st.code(), Code::kUnsupported) << p;
    EXPECT_NE(st.message().find("runs every phase over RPC"), std::string::npos) << st.message();
  }
}

TEST(Node, TransactionsNeedAReplicationProtocolThatCarriesThem) {
  EXPECT_TRUE(create(topology("primary-backup", "dnl4", "rpc")).is_ok());
  EXPECT_TRUE(create(topology("abd", "none", "rpc")).is_ok());
  EXPECT_TRUE(create(topology("primary-backup", "none", "rpc")).is_ok());  // single-key commands only
  Status st = create(topology("abd", "dnl4", "rpc"));
  EXPECT_EQ(st.code(), Code::kUnsupported);
  EXPECT_NE(st.message().find("'abd' replicates single keys only"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("use txn.protocol 'none'"), std::string::npos) << st.message();
  // Primitives choose a transaction protocol's; without one only rpc means anything.
  Status prims = create(topology("abd", "none", "onesided"));
  EXPECT_EQ(prims.code(), Code::kInvalidArgument);
  EXPECT_NE(prims.message().find("txn.protocol is 'none'"), std::string::npos) << prims.message();
}

TEST(Node, MessageRangesOfThisBuildAreDisjointAndOverlapsAreNamed) {
  auto ranges = message_ranges();
  ASSERT_TRUE(ranges.is_ok()) << ranges.status().to_string();
  EXPECT_TRUE(check_disjoint(ranges.value()).is_ok()) << check_disjoint(ranges.value()).to_string();
  // Every registered protocol has a range.
  size_t protocols = replication::replication_protocols().entries().size() + txn::cc_protocols().entries().size();
  EXPECT_EQ(ranges->size(), std::size(cluster::msgs::kServices) + protocols);
  std::vector<NamedRange> clash = ranges.value();
  clash.push_back({"a copy", clash.back().range});
  Status st = check_disjoint(clash);
  EXPECT_EQ(st.code(), Code::kInternal);
  EXPECT_NE(st.message().find("a copy"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace rdx::server
