// Initial data and invariant arithmetic: what the loaders write and what the invariant checks expect.
#include <gtest/gtest.h>

#include <map>

#include "workload/kv.h"
#include "workload/smallbank.h"
#include "workload/tatp.h"

namespace rdx::workload {
namespace {

using Store = std::map<std::string, std::string>;

Store load_all(const Workload& w, uint64_t begin, uint64_t end) {
  Store s;
  w.load(begin, end, [&](std::string_view k, std::string_view v) {
    EXPECT_TRUE(s.emplace(k, v).second) << "key loaded twice: " << k;
  });
  return s;
}

template <typename T>
std::unique_ptr<T> make(const std::string& spec) {
  auto w = make_workload(spec);
  EXPECT_TRUE(w.is_ok()) << w.status().to_string();
  return std::unique_ptr<T>(dynamic_cast<T*>(w->release()));
}

TEST(InitialData, LoadRangesAreDeterministicAndPartitionTheData) {
  for (const char* spec : {"smallbank:accounts=300", "tatp:subscribers=300", "ogp:keys=300", "ycsb-a:records=300"}) {
    auto w = make_workload(spec);
    ASSERT_TRUE(w.is_ok());
    const Workload& wl = **w;
    Store whole = load_all(wl, 0, wl.load_units());
    Store parts = load_all(wl, 0, 100);
    for (auto& kv : load_all(wl, 100, 250)) EXPECT_TRUE(parts.insert(kv).second);
    for (auto& kv : load_all(wl, 250, wl.load_units() + 10)) EXPECT_TRUE(parts.insert(kv).second);  // clamped
    EXPECT_EQ(whole, parts) << spec;
    auto again = make_workload(spec);
    EXPECT_EQ(load_all(**again, 0, (*again)->load_units()), whole) << spec;
    auto reseeded = make_workload(std::string(spec) + ",seed=2");
    EXPECT_NE(load_all(**reseeded, 0, (*reseeded)->load_units()), whole) << spec;
  }
}

TEST(InitialData, SmallBankTotalMatchesWhatIsLoaded) {
  auto sb = make<SmallBank>("smallbank:accounts=5000");
  int64_t sum = 0;
  size_t n = 0;
  sb->load(0, sb->load_units(), [&](std::string_view k, std::string_view v) {
    auto b = decode_balance(v);
    ASSERT_TRUE(b.has_value()) << k;
    EXPECT_GE(*b, 10000);
    EXPECT_LE(*b, 50000);
    sum += *b;
    ++n;
  });
  EXPECT_EQ(n, 10000u);
  EXPECT_EQ(sum, sb->initial_total());
}

TEST(InitialData, TatpPopulationFollowsTheSpecification) {
  auto t = make<Tatp>("tatp:subscribers=20000");
  double ai = 0, sf = 0, cf = 0, active = 0;
  const double n = 20000;
  for (uint64_t s = 1; s <= 20000; ++s) {
    tatp::Population p = tatp::populate(1, s);
    size_t ai_rows = 0, sf_rows = 0;
    for (size_t i = 0; i < 4; ++i) {
      ai_rows += p.access_info[i].has_value();
      if (!p.special_facility[i]) {
        for (const auto& c : p.call_forwarding[i]) EXPECT_FALSE(c.has_value());  // only under a facility
        continue;
      }
      ++sf_rows;
      active += p.special_facility[i]->is_active;
      for (size_t j = 0; j < 3; ++j) {
        if (!p.call_forwarding[i][j]) continue;
        ++cf;
        EXPECT_GT(p.call_forwarding[i][j]->end_time, tatp::kStartTimes[j]);
        EXPECT_LE(p.call_forwarding[i][j]->end_time, tatp::kStartTimes[j] + 8);
      }
    }
    ASSERT_GE(ai_rows, 1u);
    ASSERT_GE(sf_rows, 1u);
    ai += static_cast<double>(ai_rows);
    sf += static_cast<double>(sf_rows);
  }
  EXPECT_NEAR(ai / n, 2.5, 0.03);  // 1-4 uniformly
  EXPECT_NEAR(sf / n, 2.5, 0.03);
  EXPECT_NEAR(cf / sf, 1.5, 0.03);  // 0-3 per special facility
  EXPECT_NEAR(active / sf, 0.85, 0.01);
  // load() writes exactly the population's rows.
  Store s = load_all(*t, 0, 1);
  tatp::Population p = tatp::populate(1, 1);
  size_t rows = 1;
  for (size_t i = 0; i < 4; ++i) {
    rows += p.access_info[i].has_value() + p.special_facility[i].has_value();
    for (const auto& c : p.call_forwarding[i]) rows += c.has_value();
  }
  EXPECT_EQ(s.size(), rows);
  EXPECT_EQ(s.at(tatp::subscriber_key(1)), tatp::encode(p.subscriber));
}

// Runs SmallBank's transaction logic serially over a map, committing or dropping each transaction at random, and
// accumulates the ledger exactly as run_one does: the invariant's arithmetic must balance to the cent.
TEST(Invariant, SmallBankLedgerAccountsForEveryCommittedCent) {
  auto sb = make<SmallBank>("smallbank:accounts=50,deposit=130,transact=2020");
  Store store = load_all(*sb, 0, sb->load_units());
  Rng rng(8);
  Ledger ledger;
  size_t rollbacks = 0, penalties = 0;
  for (int i = 0; i < 200000; ++i) {
    SbPlan p = sb->plan(rng);
    std::vector<std::string> keys = SmallBank::read_keys(p);
    std::vector<int64_t> before;
    for (const auto& k : keys) before.push_back(*decode_balance(store.at(k)));
    SbEffect e = SmallBank::apply(p, before);
    int64_t old_sum = 0, new_sum = 0;
    std::vector<int64_t> after = before;
    for (const auto& [idx, v] : e.writes) after[idx] = v;
    for (size_t j = 0; j < keys.size(); ++j) {
      old_sum += before[j];
      new_sum += after[j];
    }
    ASSERT_EQ(new_sum - old_sum, e.delta) << "type " << static_cast<int>(p.type);
    rollbacks += e.rollback;
    penalties += p.type == SbType::kWriteCheck && e.delta == -(p.amount + 1);
    if (e.rollback || rng.chance(0.3)) continue;  // rolled back, or aborted by the protocol: nothing applied
    for (const auto& [idx, v] : e.writes) store[keys[idx]] = encode_balance(v);
    ledger.balance_delta += e.delta;
  }
  int64_t total = 0;
  for (const auto& [k, v] : store) total += *decode_balance(v);
  EXPECT_EQ(total, sb->initial_total() + ledger.balance_delta);
  EXPECT_GT(rollbacks, 0u);  // Amalgamate empties accounts, so payments from them roll back
  EXPECT_GT(penalties, 0u);  // and checks on empty accounts pay the overdraft penalty
}

// A commit that could not learn its outcome may or may not have moved its money: the ledger accepts any total
// between none and all of those deltas, and nothing outside.
TEST(Invariant, LedgerAcceptsTheRangeOfUnknownOutcomes) {
  Ledger a, b;
  a.balance_delta = 10;
  a.add_unknown(-3);
  b.add_unknown(5);
  b.add_unknown(-1);
  a.merge(b);
  EXPECT_EQ(a.unknown_down, -4);
  EXPECT_EQ(a.unknown_up, 5);
  EXPECT_TRUE(a.explains(10));
  EXPECT_TRUE(a.explains(6));
  EXPECT_TRUE(a.explains(15));
  EXPECT_FALSE(a.explains(5));
  EXPECT_FALSE(a.explains(16));
  Ledger exact;
  exact.balance_delta = 7;
  EXPECT_TRUE(exact.explains(7));
  EXPECT_FALSE(exact.explains(8));
}

TEST(Invariant, SmallBankTransactionRules) {
  SbPlan pay{SbType::kSendPayment, 1, 2, 500};
  EXPECT_TRUE(SmallBank::apply(pay, {499, 0}).rollback);
  SbEffect ok = SmallBank::apply(pay, {500, 7});
  EXPECT_FALSE(ok.rollback);
  EXPECT_EQ(ok.writes, (std::vector<std::pair<size_t, int64_t>>{{0, 0}, {1, 507}}));
  SbPlan check{SbType::kWriteCheck, 1, 0, 500};
  EXPECT_EQ(SmallBank::apply(check, {200, 300}).delta, -500);
  EXPECT_EQ(SmallBank::apply(check, {200, 299}).delta, -501);  // overdraft penalty
  SbEffect amalgamate = SmallBank::apply({SbType::kAmalgamate, 1, 2, 0}, {10, 20, 30});
  EXPECT_EQ(amalgamate.writes, (std::vector<std::pair<size_t, int64_t>>{{0, 0}, {1, 0}, {2, 60}}));
  EXPECT_EQ(amalgamate.delta, 0);
  EXPECT_TRUE(SmallBank::apply({SbType::kTransactSavings, 1, 0, -100}, {99}).rollback);
  EXPECT_TRUE(SmallBank::apply({SbType::kDepositChecking, 1, 0, 10}, {kMaxBalance}).rollback);  // limit
  EXPECT_TRUE(SmallBank::apply({SbType::kBalance, 1, 0, 0}, {1, 2}).writes.empty());
}

}  // namespace
}  // namespace rdx::workload
