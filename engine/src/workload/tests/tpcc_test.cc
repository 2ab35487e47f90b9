// TPC-C-lite's pieces that need no cluster: its encodings, its parameters and its initial data. (On a cluster, with
// its consistency conditions checked: the transaction conformance suite and tests/integration/test_txn.py.)
#include "workload/tpcc.h"

#include <gtest/gtest.h>

#include <map>

#include "workload/params.h"

namespace rdx::workload {
namespace {

TEST(TpccLiteEncoding, RowsRoundTripAndRejectAnythingElse) {
  const std::vector<int64_t> row = {-1000, 1000, 1};
  EXPECT_EQ(TpccLite::encode_row(row), "-1000 1000 1");
  EXPECT_EQ(TpccLite::decode_row("-1000 1000 1", 3), row);
  for (const char* bad : {"", " ", "1", "1 2", "1 2 3 4", "1  2 3", " 1 2 3", "1 2 3 ", "1 2 x", "01 2 3", "-0 1 2",
                          "1 2 1000000000000000001", "1\t2 3"}) {
    EXPECT_FALSE(TpccLite::decode_row(bad, 3).has_value()) << bad;
  }
}

TEST(TpccLiteEncoding, OrdersRoundTripAndRejectBadLineCounts) {
  TpccLite::Order o{7, {{3, 0, 5, 2500}, {9, 1, 1, 100}}};
  const std::string text = TpccLite::encode_order(o);
  EXPECT_EQ(text, "7 2 3:0:5:2500 9:1:1:100");
  auto back = TpccLite::decode_order(text);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->customer, 7);
  ASSERT_EQ(back->lines.size(), 2u);
  EXPECT_EQ(back->lines[1].supply, 1);
  EXPECT_EQ(back->lines[1].amount, 100);
  for (const char* bad : {"", "7", "7 3 3:0:5:2500 9:1:1:100", "7 1 3:0:5:2500 9:1:1:100", "7 1 3:0:5", "7 1 3:0:5:x",
                          "7 1 3::5:1", "7 1 3:0:5:1:2"}) {
    EXPECT_FALSE(TpccLite::decode_order(bad).has_value()) << bad;
  }
}

TEST(TpccLiteKeys, AWarehouseSharesOneHashTag) {
  // The tag {w<w>} puts every row of a warehouse on one shard (cluster/topology.h); items carry none.
  for (const std::string& k :
       {TpccLite::warehouse_key(3), TpccLite::district_key(3, 9), TpccLite::customer_key(3, 1, 2),
        TpccLite::stock_key(3, 77), TpccLite::order_key(3, 1, 12)}) {
    EXPECT_NE(k.find("{w3}"), std::string::npos) << k;
  }
  EXPECT_EQ(TpccLite::item_key(5).find('{'), std::string::npos);
}

TEST(TpccLiteParams, RangesAreEnforced) {
  ParamReader ok("tpcc-lite", {{"warehouses", "2"}, {"customers", "20"}, {"items", "200"}});
  TpccLite w(ok);
  EXPECT_TRUE(ok.finish().is_ok()) << ok.finish().to_string();
  EXPECT_EQ(w.load_units(), 202u);
  for (auto bad : std::vector<std::pair<std::string, std::string>>{
           {"warehouses", "0"}, {"items", "14"}, {"districts", "101"}, {"remote_percent", "101"}, {"bogus", "1"}}) {
    ParamReader p("tpcc-lite", {bad});
    TpccLite ignored(p);
    EXPECT_FALSE(p.finish().is_ok()) << bad.first << "=" << bad.second;
  }
}

TEST(TpccLiteLoad, InitialDataMeetsTheConsistencyConditions) {
  ParamReader p("tpcc-lite", {{"warehouses", "2"}, {"districts", "3"}, {"customers", "4"}, {"items", "20"}});
  TpccLite w(p);
  std::map<std::string, std::string> data;
  w.load(0, w.load_units(), [&](std::string_view k, std::string_view v) { data.emplace(k, v); });
  EXPECT_EQ(data.size(), 2 * (1 + 3 + 3 * 4 + 20) + 20u);
  for (uint64_t wh = 0; wh < 2; ++wh) {
    int64_t districts = 0;
    for (uint64_t d = 0; d < 3; ++d) {
      auto row = TpccLite::decode_row(data.at(TpccLite::district_key(wh, d)), 2);
      ASSERT_TRUE(row.has_value());
      districts += (*row)[0];
      EXPECT_EQ((*row)[1], 1);  // no order yet
      auto c = TpccLite::decode_row(data.at(TpccLite::customer_key(wh, d, 3)), 3);
      ASSERT_TRUE(c.has_value());
      EXPECT_EQ((*c)[0] + (*c)[1], 0);
    }
    EXPECT_EQ(TpccLite::decode_row(data.at(TpccLite::warehouse_key(wh)), 1), std::vector<int64_t>{districts});
    auto stock = TpccLite::decode_row(data.at(TpccLite::stock_key(wh, 19)), 4);
    ASSERT_TRUE(stock.has_value());
    EXPECT_GE((*stock)[0], 10);
    EXPECT_EQ((*stock)[1], 0);
  }
  EXPECT_TRUE(TpccLite::decode_row(data.at(TpccLite::item_key(19)), 1).has_value());
}

}  // namespace
}  // namespace rdx::workload
