// The meaning of every single-key operation (replication::apply_rmw) and its wire encoding.
#include "replication/ops.h"

#include <gtest/gtest.h>

#include <limits>

#include "store/hashtable.h"

namespace rdx::replication {
namespace {

using When = Rmw::When;

TEST(Rmw, PutsAndConditions) {
  Applied a = apply_rmw(Rmw::put("v"), std::nullopt);
  EXPECT_TRUE(a.applied && a.write);
  EXPECT_EQ(a.new_value, "v");
  Rmw nx = Rmw::put("v");
  nx.when = When::kIfAbsent;
  EXPECT_FALSE(apply_rmw(nx, std::string("old")).write);
  EXPECT_TRUE(apply_rmw(nx, std::nullopt).write);
  Rmw xx = Rmw::put("v");
  xx.when = When::kIfPresent;
  EXPECT_FALSE(apply_rmw(xx, std::nullopt).applied);
  EXPECT_TRUE(apply_rmw(xx, std::string("old")).applied);
  Rmw cas = Rmw::put("new");
  cas.when = When::kIfEquals;
  cas.expected = "old";
  EXPECT_TRUE(apply_rmw(cas, std::string("old")).write);
  EXPECT_FALSE(apply_rmw(cas, std::string("other")).write);
  EXPECT_FALSE(apply_rmw(cas, std::nullopt).write);
}

TEST(Rmw, DeletesChangeOnlyWhatExists) {
  Applied gone = apply_rmw(Rmw::remove(), std::string("v"));
  EXPECT_TRUE(gone.write);
  EXPECT_FALSE(gone.new_value.has_value());
  EXPECT_FALSE(apply_rmw(Rmw::remove(), std::nullopt).write);
}

TEST(Rmw, AddFollowsRedisIntegerRules) {
  Applied a = apply_rmw(Rmw::add(5), std::nullopt);
  EXPECT_EQ(a.number, 5);
  EXPECT_EQ(a.new_value, "5");
  EXPECT_EQ(apply_rmw(Rmw::add(-7), std::string("5")).new_value, "-2");
  for (const char* bad : {"x", "01", " 1", "+1", "1.5", ""}) {
    Applied r = apply_rmw(Rmw::add(1), std::string(bad));
    EXPECT_EQ(r.status, Code::kInvalidArgument) << bad;
    EXPECT_FALSE(r.write) << bad;
    EXPECT_EQ(r.error, "value is not an integer or out of range");
  }
  Applied over = apply_rmw(Rmw::add(1), std::to_string(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(over.status, Code::kInvalidArgument);
  EXPECT_EQ(over.error, "increment or decrement would overflow");
  EXPECT_EQ(apply_rmw(Rmw::add(-1), std::to_string(std::numeric_limits<int64_t>::min())).status,
            Code::kInvalidArgument);
}

TEST(Rmw, AppendCountsAndRefusesOversizedValues) {
  Applied a = apply_rmw(Rmw::append("def"), std::string("abc"));
  EXPECT_EQ(a.new_value, "abcdef");
  EXPECT_EQ(a.number, 6);
  EXPECT_EQ(apply_rmw(Rmw::append("x"), std::nullopt).number, 1);
  Applied big = apply_rmw(Rmw::append("x"), std::string(store::kMaxValueBytes, 'a'));
  EXPECT_EQ(big.status, Code::kInvalidArgument);
  EXPECT_FALSE(big.write);
}

TEST(Rmw, EncodingRoundTripsAndRejectsGarbage) {
  Rmw op = Rmw::append("tail");
  op.when = When::kIfEquals;
  op.expected = "head";
  op.return_old = true;
  op.delta = -3;
  rpc::Writer w;
  op.encode(w);
  rpc::Reader r(w.span());
  Rmw back;
  ASSERT_TRUE(Rmw::decode(r, &back));
  EXPECT_TRUE(r.done());
  EXPECT_EQ(back.kind, op.kind);
  EXPECT_EQ(back.when, op.when);
  EXPECT_EQ(back.value, "tail");
  EXPECT_EQ(back.expected, "head");
  EXPECT_EQ(back.delta, -3);
  EXPECT_TRUE(back.return_old);
  // Unknown kind, unknown condition, truncated.
  for (size_t byte : {size_t{0}, size_t{1}}) {
    std::string bad = w.data();
    bad[byte] = 9;
    rpc::Reader rb(bad);
    Rmw x;
    EXPECT_FALSE(Rmw::decode(rb, &x)) << byte;
  }
  std::string truncated = w.data().substr(0, 5);
  rpc::Reader rt(truncated);
  Rmw y;
  EXPECT_FALSE(Rmw::decode(rt, &y));

  WriteResult res;
  res.status = Code::kInvalidArgument;
  res.existed = true;
  res.number = 42;
  res.old_value = "old";
  res.error = "why";
  rpc::Writer wr;
  res.encode(wr);
  rpc::Reader rr(wr.span());
  WriteResult got;
  ASSERT_TRUE(WriteResult::decode(rr, &got));
  EXPECT_EQ(got.status, Code::kInvalidArgument);
  EXPECT_EQ(got.number, 42);
  EXPECT_EQ(got.old_value, "old");
  EXPECT_EQ(got.error, "why");
}

}  // namespace
}  // namespace rdx::replication
