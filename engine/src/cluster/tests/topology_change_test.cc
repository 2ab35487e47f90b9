#include "cluster/topology_change.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace rdx::cluster {
namespace {

// `members` data nodes n0.. in one shard (or two, alternating, as the operator lays pods out ordinal-major), at
// `epoch`; `workers` stands for any setting only a restart changes.
Topology make(uint32_t epoch, int members, int shards = 1, int workers = 2) {
  std::string nodes, shard_members[2];
  for (int i = 0; i < members; ++i) {
    nodes += fmt::format(R"({}{{"name": "n{}", "host": "127.0.0.1", "port": {}}})", i ? "," : "", i, 7000 + i);
    std::string& m = shard_members[i % shards];
    m += fmt::format(R"({}"n{}")", m.empty() ? "" : ",", i);
  }
  std::string shard_list = fmt::format(R"({{"id": 0, "members": [{}]}})", shard_members[0]);
  if (shards == 2) shard_list += fmt::format(R"(, {{"id": 1, "members": [{}]}})", shard_members[1]);
  auto t =
      parse_topology(fmt::format(R"({{"cluster": "c", "epoch": {}, "workers": {}, "shards": [{}], "nodes": [{}]}})",
                                 epoch, workers, shard_list, nodes));
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return t.value();
}

TEST(TopologyChange, AddsANodeAtTheEnd) {
  auto c = plan_topology_change(make(1, 3), make(2, 4), 0);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->added, std::vector<uint16_t>{3});
  EXPECT_TRUE(c->removed.empty());
  EXPECT_FALSE(c->self_removed);
  EXPECT_EQ(c->merged.epoch, 2u);
  EXPECT_EQ(c->merged.shards[0].members, (std::vector<uint16_t>{0, 1, 2, 3}));
}

TEST(TopologyChange, ARemovedNodeKeepsItsSlotAndComesBackToIt) {
  auto down = plan_topology_change(make(4, 5), make(5, 4), 0);
  ASSERT_TRUE(down.is_ok()) << down.status().to_string();
  EXPECT_EQ(down->removed, std::vector<uint16_t>{4});
  ASSERT_EQ(down->merged.nodes.size(), 5u);
  EXPECT_EQ(down->merged.nodes[4].role, Role::kRemoved);
  EXPECT_EQ(down->merged.nodes[4].shard, -1);
  EXPECT_EQ(data_node_count(down->merged), 4u);
  EXPECT_EQ(other_data_nodes(down->merged, 0), (std::vector<uint16_t>{1, 2, 3}));
  // The removed node itself learns it leaves.
  EXPECT_TRUE(plan_topology_change(make(4, 5), make(5, 4), 4)->self_removed);
  // Back in a later epoch: the same id.
  auto up = plan_topology_change(down->merged, make(6, 5), 0);
  ASSERT_TRUE(up.is_ok()) << up.status().to_string();
  EXPECT_EQ(up->added, std::vector<uint16_t>{4});
  EXPECT_EQ(up->merged.nodes[4].role, Role::kData);
  EXPECT_EQ(up->merged.nodes[4].shard, 0);
}

TEST(TopologyChange, OneNodePerShardInALargerCluster) {
  // 6 -> 8 data nodes (one more replica in each of two shards): every majority of 6 (4) meets every one of 8 (5).
  auto c = plan_topology_change(make(1, 6, 2), make(2, 8, 2), 0);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->added, (std::vector<uint16_t>{6, 7}));
  EXPECT_EQ(c->merged.nodes[7].shard, 1);
}

TEST(TopologyChange, RefusesWhatNeedsARestartOrBreaksMajorities) {
  struct Case {
    const char* name;
    Topology running, next;
    const char* expect;
  } cases[] = {
      {"same epoch", make(2, 3), make(2, 4), "not newer"},
      {"older epoch", make(2, 3), make(1, 4), "not newer"},
      {"a setting", make(1, 3), make(2, 4, 1, 4), "changes workers"},
      {"two nodes at once (3 -> 5)", make(1, 3), make(2, 5), "could be disjoint"},
      {"two nodes at once (5 -> 3)", make(1, 5), make(2, 3), "could be disjoint"},
      {"shard count", make(1, 4, 2), make(2, 4, 1), "shards (their number)"},
  };
  for (const Case& k : cases) {
    auto c = plan_topology_change(k.running, k.next, 0);
    ASSERT_FALSE(c.is_ok()) << k.name;
    EXPECT_NE(c.status().message().find(k.expect), std::string::npos) << k.name << ": " << c.status().message();
  }
  // A node renamed or moved in place: ids would change meaning.
  Topology renamed = make(2, 3);
  renamed.nodes[1].name = "other";
  auto c = plan_topology_change(make(1, 3), renamed, 0);
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("only appends nodes"), std::string::npos) << c.status().message();
  Topology moved = make(2, 3);
  moved.nodes[2].port = 9999;
  EXPECT_FALSE(plan_topology_change(make(1, 3), moved, 0).is_ok());
}

TEST(TopologyChange, ANodeThatMissedEpochsRejoinsInsteadOfCountingTheOldMajority) {
  // 3 -> 5 through an epoch this node never saw: the others moved one node at a time; it must not go on counting
  // majorities of 3 (it could keep authority as a primary while 3 of the 5 elect another).
  auto c = plan_topology_change(make(1, 3), make(3, 5), 0);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_TRUE(c->rejoin);
  EXPECT_EQ(c->added, (std::vector<uint16_t>{3, 4}));
  // One step that overlaps, even across skipped epochs, is applied as usual.
  EXPECT_FALSE(plan_topology_change(make(1, 3), make(5, 4), 0)->rejoin);
}

TEST(TopologyChange, FingerprintIgnoresEpochAndMembersOnly) {
  EXPECT_EQ(restart_fingerprint(make(1, 3)), restart_fingerprint(make(7, 5)));
  EXPECT_NE(restart_fingerprint(make(1, 3)), restart_fingerprint(make(1, 3, 1, 4)));
  EXPECT_NE(restart_fingerprint(make(1, 4, 1)), restart_fingerprint(make(1, 4, 2)));
}

}  // namespace
}  // namespace rdx::cluster
