// What a node refuses before it starts: protocols and primitives this build does not implement, combinations the
// families-and-keys rule forbids, and message ranges that collide.
#include "server/node.h"

#include <gtest/gtest.h>

#include <tuple>

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
  Status rep = create(topology("derecho", "dnl4", "rpc"));
  EXPECT_EQ(rep.code(), Code::kUnsupported);
  EXPECT_NE(rep.message().find("replication protocol 'derecho' is not implemented"), std::string::npos)
      << rep.message();
  EXPECT_NE(rep.message().find("primary-backup"), std::string::npos) << rep.message();
  Status cc = create(topology("primary-backup", "calvin", "rpc"));
  EXPECT_EQ(cc.code(), Code::kUnsupported);
  EXPECT_NE(cc.message().find("dnl4, dnl2, dnl1"), std::string::npos) << cc.message();
  EXPECT_NE(cc.message().find("sundial"), std::string::npos) << cc.message();
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

// hybrid's per-phase choice (transport.onesided_phases): a phase the protocol runs one-sided is taken; a phase it
// runs over RPC only, and a name that is no phase, are refused with what it runs one-sided; a choice with another
// primitives value is refused by the topology itself.
TEST(Node, HybridTakesOnlyPhasesTheProtocolRunsOneSided) {
  const auto with_phases = [](const std::string& txn, const std::string& primitives, const std::string& phases) {
    return cluster::parse_topology(R"({"cluster": "t", "epoch": 1,
      "transport": {"kind": "tcp", "primitives": ")" +
                                   primitives + R"(", "onesided_phases": )" + phases + R"(},
      "txn": {"protocol": ")" + txn +
                                   R"("},
      "shards": [{"id": 0, "members": ["n0"]}], "nodes": [{"name": "n0", "host": "127.0.0.1", "port": 7001}]})");
  };
  auto read = with_phases("occ", "hybrid", R"(["read"])");
  ASSERT_TRUE(read.is_ok()) << read.status().to_string();
  EXPECT_TRUE(create(read.value()).is_ok());
  auto lock = with_phases("occ", "hybrid", R"(["read", "lock"])");
  ASSERT_TRUE(lock.is_ok()) << lock.status().to_string();
  Status st = create(lock.value());
  EXPECT_EQ(st.code(), Code::kUnsupported);
  EXPECT_NE(st.message().find("'occ' runs phase 'lock' over RPC only (one-sided: read)"), std::string::npos)
      << st.message();
  auto unknown = with_phases("occ", "hybrid", R"(["reed"])");
  ASSERT_TRUE(unknown.is_ok()) << unknown.status().to_string();
  st = create(unknown.value());
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("'reed' is not a phase (phases: read, lock, validate"), std::string::npos)
      << st.message();
  auto rpc_only = with_phases("nowait", "hybrid", R"(["read"])");
  ASSERT_TRUE(rpc_only.is_ok());
  st = create(rpc_only.value());
  EXPECT_EQ(st.code(), Code::kUnsupported);
  EXPECT_NE(st.message().find("it runs every phase over RPC"), std::string::npos) << st.message();
  for (const auto& [primitives, phases, want] :
       {std::tuple{"onesided", R"(["read"])",
                   "chooses the phases of primitives 'hybrid', and primitives is 'onesided'"},
        std::tuple{"hybrid", "[]", "lists no phase"}, std::tuple{"hybrid", R"(["read", "read"])", "listed twice"},
        std::tuple{"hybrid", R"("read")", "must be a list of strings"}}) {
    auto t = with_phases("occ", primitives, phases);
    ASSERT_FALSE(t.is_ok()) << phases;
    EXPECT_EQ(t.status().code(), Code::kInvalidArgument);
    EXPECT_NE(t.status().message().find(want), std::string::npos) << t.status().message();
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
