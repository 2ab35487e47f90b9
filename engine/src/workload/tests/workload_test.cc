#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "workload/distributions.h"
#include "workload/kv.h"
#include "workload/smallbank.h"
#include "workload/tatp.h"

namespace rdx::workload {
namespace {

template <typename T>
std::unique_ptr<T> make(const std::string& spec) {
  auto w = make_workload(spec);
  EXPECT_TRUE(w.is_ok()) << spec << ": " << w.status().to_string();
  if (!w.is_ok()) return nullptr;
  auto* typed = dynamic_cast<T*>(w->get());
  EXPECT_NE(typed, nullptr) << spec;
  w->release();
  return std::unique_ptr<T>(typed);
}

std::string error_of(const std::string& spec) {
  auto w = make_workload(spec);
  EXPECT_FALSE(w.is_ok()) << spec;
  return w.is_ok() ? "" : w.status().message();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Frequencies of `draw` over n samples, per outcome.
template <typename F>
std::map<uint64_t, double> frequencies(size_t n, F draw) {
  std::map<uint64_t, double> f;
  for (size_t i = 0; i < n; ++i) f[draw()] += 1.0 / static_cast<double>(n);
  return f;
}

TEST(WorkloadSpec, ParsesNamesAndParameters) {
  auto s = parse_workload_spec(" SmallBank : accounts = 1000 , hot_percent=4 ");
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s->name, "smallbank");
  ASSERT_EQ(s->params.size(), 2u);
  EXPECT_EQ(s->params[0], (std::pair<std::string, std::string>{"accounts", "1000"}));
  EXPECT_EQ(s->params[1], (std::pair<std::string, std::string>{"hot_percent", "4"}));
  EXPECT_TRUE(parse_workload_spec("tatp").is_ok());
  EXPECT_FALSE(parse_workload_spec("").is_ok());
  EXPECT_FALSE(parse_workload_spec(":a=1").is_ok());
  EXPECT_TRUE(contains(parse_workload_spec("tatp:subscribers").status().message(), "\"subscribers\" is not key=value"));
}

TEST(WorkloadSpec, RejectsUnknownOrBadParametersClearly) {
  EXPECT_TRUE(contains(error_of("smalbank"), "unknown workload \"smalbank\" (known: smallbank, tatp"));
  EXPECT_TRUE(contains(error_of("smallbank:acounts=5"), "unknown parameter acounts (known: seed, parallel_gets"));
  EXPECT_TRUE(contains(error_of("smallbank:accounts=ten"), "accounts=ten is not a non-negative integer"));
  EXPECT_TRUE(contains(error_of("smallbank:accounts=1"), "accounts=1 is out of range [2,"));
  EXPECT_TRUE(contains(error_of("smallbank:accounts=5,accounts=6"), "given twice"));
  EXPECT_TRUE(contains(error_of("smallbank:hot_prob=1.5"), "hot_prob=1.5 is out of range"));
  EXPECT_TRUE(contains(error_of("smallbank:accounts=10,hot_percent=1"), "hot_percent=1 gives 0 hot accounts"));
  EXPECT_TRUE(contains(error_of("smallbank:mix=1/2/3"), "must be 6 weights"));
  EXPECT_TRUE(contains(error_of("smallbank:mix=0/0/0/0/0/0"), "not all zero"));
  EXPECT_TRUE(contains(error_of("tatp:nurand=yes"), "nurand=yes must be 0, 1, true or false"));
  EXPECT_TRUE(contains(error_of("ycsb-a:dist=pareto"), "dist=pareto is not one of uniform|zipfian"));
  EXPECT_TRUE(contains(error_of("ogp:g=0,p=0"), "g and p cannot both be 0"));
  EXPECT_TRUE(contains(error_of("ogp:keys=3,g=4"), "needs 4 distinct keys but keys=3"));
  EXPECT_TRUE(contains(error_of("o(4,2):g=1"), "do not also set g"));
}

TEST(WorkloadSpec, ReportsEffectiveParametersAndTypes) {
  auto sb = make<SmallBank>("smallbank:accounts=1000");
  ASSERT_TRUE(sb);
  EXPECT_EQ(sb->name(), "smallbank");
  EXPECT_EQ(sb->txn_types(), (std::vector<std::string>{"Amalgamate", "Balance", "DepositChecking", "SendPayment",
                                                       "TransactSavings", "WriteCheck"}));
  std::map<std::string, std::string> params(sb->params().begin(), sb->params().end());
  EXPECT_EQ(params["accounts"], "1000");
  EXPECT_EQ(params["hot_prob"], "0.9");
  EXPECT_EQ(params["mix"], "15/15/15/25/15/15");
  auto o = make<Ogp>("O(4,2):keys=100");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->name(), "ogp");
  EXPECT_EQ(o->txn_types(), std::vector<std::string>{"O(4,2)"});
  EXPECT_EQ(make<Ycsb>("ycsb-f")->txn_types(), (std::vector<std::string>{"Read", "ReadModifyWrite"}));
  EXPECT_EQ(make<Ycsb>("ycsb-c")->txn_types(), std::vector<std::string>{"Read"});
  std::string help = workload_help();
  for (const char* n : {"smallbank", "tatp", "ogp", "ycsb-a", "ycsb-f", "hot_percent", "subscribers", "theta"}) {
    EXPECT_TRUE(contains(help, n)) << n;
  }
}

TEST(Mix, SmallBankAndTatpFollowTheirStandardMixes) {
  const size_t n = 1'000'000;
  Rng rng(11);
  auto sb = make<SmallBank>("smallbank:accounts=1000");
  auto f = frequencies(n, [&] { return static_cast<uint64_t>(sb->plan(rng).type); });
  std::vector<double> want{0.15, 0.15, 0.15, 0.25, 0.15, 0.15};
  for (size_t t = 0; t < want.size(); ++t) EXPECT_NEAR(f[t], want[t], 0.003) << sb->txn_types()[t];

  auto tatp = make<Tatp>("tatp:subscribers=1000");
  f = frequencies(n, [&] { return static_cast<uint64_t>(tatp->plan(rng).type); });
  want = {0.35, 0.10, 0.35, 0.02, 0.14, 0.02, 0.02};
  for (size_t t = 0; t < want.size(); ++t) EXPECT_NEAR(f[t], want[t], 0.003) << tatp->txn_types()[t];

  auto custom = make<SmallBank>("smallbank:accounts=1000,mix=0/1/0/3/0/0");
  f = frequencies(100000, [&] { return static_cast<uint64_t>(custom->plan(rng).type); });
  EXPECT_EQ(f.size(), 2u);
  EXPECT_NEAR(f[static_cast<uint64_t>(SbType::kSendPayment)], 0.75, 0.01);
}

TEST(Mix, YcsbOperationProportions) {
  Rng rng(5);
  for (auto [spec, read_fraction] : std::vector<std::pair<std::string, double>>{
           {"ycsb-a", 0.5}, {"ycsb-b", 0.95}, {"ycsb-c", 1.0}, {"ycsb-f", 0.5}, {"ycsb-rcc", 0.9}}) {
    auto y = make<Ycsb>(spec + ":records=10000,ops=4");
    ASSERT_TRUE(y);
    size_t ops = 0, pure_reads = 0;
    for (int i = 0; i < 200000; ++i) {
      KvPlan p = y->plan(rng);
      std::set<uint64_t> keys(p.reads.begin(), p.reads.end());
      keys.insert(p.writes.begin(), p.writes.end());
      ASSERT_EQ(keys.size(), 4u) << spec;  // four distinct keys
      for (uint64_t w : p.writes) {
        bool read_too = std::find(p.reads.begin(), p.reads.end(), w) != p.reads.end();
        EXPECT_EQ(read_too, spec == "ycsb-f" || spec == "ycsb-rcc") << spec;  // F, RCC read what they write
      }
      EXPECT_EQ(p.type, p.writes.empty() ? 0 : 1);
      ops += 4;
      pure_reads += 4 - p.writes.size();
    }
    EXPECT_NEAR(static_cast<double>(pure_reads) / static_cast<double>(ops), read_fraction, 0.005) << spec;
  }
}

TEST(Plans, OgpReadsThenWritesDistinctKeys) {
  Rng rng(9);
  for (auto [spec, g, p] : std::vector<std::tuple<std::string, size_t, size_t>>{
           {"o(1,0)", 1, 0}, {"o(0,1)", 0, 1}, {"o(4,0)", 4, 0}, {"o(4,2)", 4, 2}, {"ogp:g=2,p=3", 2, 3}}) {
    auto w = make<Ogp>(spec + (spec[0] == 'o' && spec[1] == '(' ? ":keys=50" : ",keys=50"));
    ASSERT_TRUE(w);
    for (int i = 0; i < 10000; ++i) {
      KvPlan plan = w->plan(rng);
      ASSERT_EQ(plan.reads.size(), g);
      ASSERT_EQ(plan.writes.size(), p);
      EXPECT_EQ(std::set<uint64_t>(plan.reads.begin(), plan.reads.end()).size(), g);
      EXPECT_EQ(std::set<uint64_t>(plan.writes.begin(), plan.writes.end()).size(), p);
      for (size_t j = 0; j < std::min(g, p); ++j) EXPECT_EQ(plan.writes[j], plan.reads[j]);  // rmw=1
      for (uint64_t k : plan.reads) EXPECT_LT(k, 50u);
    }
  }
  auto blind = make<Ogp>("ogp:keys=50,g=4,p=2,rmw=0");
  KvPlan plan = blind->plan(rng);
  std::set<uint64_t> all(plan.reads.begin(), plan.reads.end());
  all.insert(plan.writes.begin(), plan.writes.end());
  EXPECT_EQ(all.size(), 6u);
}

TEST(Plans, SmallBankAccountsAmountsAndHotSpot) {
  Rng rng(21);
  auto sb = make<SmallBank>("smallbank:accounts=10000,hot_percent=4,hot_prob=0.9");
  size_t hot = 0, draws = 0;
  for (int i = 0; i < 200000; ++i) {
    SbPlan p = sb->plan(rng);
    ASSERT_LT(p.a, 10000u);
    hot += p.a < 400;
    ++draws;
    if (p.type == SbType::kAmalgamate || p.type == SbType::kSendPayment) {
      EXPECT_NE(p.a, p.b);
    }
    int64_t amount = p.type == SbType::kDepositChecking                                ? 130
                     : p.type == SbType::kTransactSavings                              ? 2020
                     : p.type == SbType::kSendPayment || p.type == SbType::kWriteCheck ? 500
                                                                                       : 0;
    EXPECT_EQ(p.amount, amount);
  }
  EXPECT_NEAR(static_cast<double>(hot) / static_cast<double>(draws), 0.9, 0.005);
}

TEST(Plans, TatpParametersStayInTheirDomains) {
  Rng rng(4);
  auto t = make<Tatp>("tatp:subscribers=5000");
  std::map<uint64_t, size_t> hits;
  for (int i = 0; i < 200000; ++i) {
    TatpPlan p = t->plan(rng);
    ASSERT_GE(p.s_id, 1u);
    ASSERT_LE(p.s_id, 5000u);
    ++hits[p.s_id];
    ASSERT_GE(p.sf_type, 1u);
    ASSERT_LE(p.sf_type, 4u);
    ASSERT_GE(p.ai_type, 1u);
    ASSERT_LE(p.ai_type, 4u);
    ASSERT_GE(tatp::start_time_index(p.start_time), 0);
    if (p.type == TatpType::kInsertCallForwarding) {
      EXPECT_GT(p.end_time, p.start_time);
      EXPECT_LE(p.end_time, p.start_time + 8);
      EXPECT_TRUE(std::all_of(p.numberx.begin(), p.numberx.end(), [](char c) { return c >= '0' && c <= '9'; }));
    }
    if (p.type == TatpType::kGetNewDestination) {
      EXPECT_GE(p.end_time, 1);
      EXPECT_LE(p.end_time, 24);
    }
  }
  // NURand is non-uniform: the busiest subscriber is hit far more often than under a uniform choice (40 expected).
  size_t busiest = 0;
  for (const auto& [s, c] : hits) busiest = std::max(busiest, c);
  EXPECT_GT(busiest, 120u);
}

TEST(Distributions, UniformZipfianHotspotNuRand) {
  Rng rng(77);
  const uint64_t n = 1000;
  const size_t samples = 1'000'000;
  auto u = KeyChooser::uniform(n);
  auto f = frequencies(samples, [&] { return u.next(rng); });
  EXPECT_EQ(f.size(), n);
  for (const auto& [k, p] : f) EXPECT_NEAR(p, 1.0 / n, 0.0004) << k;

  auto z = KeyChooser::zipfian(n, 0.99);
  f = frequencies(samples, [&] { return z.next(rng); });
  double zeta = 0;
  for (uint64_t i = 1; i <= n; ++i) zeta += 1.0 / std::pow(static_cast<double>(i), 0.99);
  std::vector<double> sorted;
  for (const auto& [k, p] : f) {
    EXPECT_LT(k, n);
    sorted.push_back(p);
  }
  std::sort(sorted.rbegin(), sorted.rend());
  EXPECT_NEAR(sorted[0], 1.0 / zeta, 0.01);                        // rank 1
  EXPECT_NEAR(sorted[1], 1.0 / (zeta * std::pow(2, 0.99)), 0.01);  // rank 2
  EXPECT_GT(f.size(), n * 9 / 10);  // the ranks map onto (nearly) every key: a bijection, not a hash

  auto h = KeyChooser::hotspot(n, 40, 0.9);
  size_t hot = 0;
  for (size_t i = 0; i < samples; ++i) hot += h.next(rng) < 40;
  EXPECT_NEAR(static_cast<double>(hot) / samples, 0.9, 0.002);

  auto nu = KeyChooser::nurand(n, 255);
  for (int i = 0; i < 100000; ++i) ASSERT_LT(nu.next(rng), n);
}

TEST(Rng, BoundsAreInclusiveAndUnbiased) {
  Rng rng(1);
  std::map<uint64_t, size_t> counts;
  for (int i = 0; i < 600000; ++i) ++counts[rng.between(3, 8)];
  ASSERT_EQ(counts.size(), 6u);
  EXPECT_EQ(counts.begin()->first, 3u);
  EXPECT_EQ(counts.rbegin()->first, 8u);
  for (const auto& [v, c] : counts) EXPECT_NEAR(static_cast<double>(c), 100000.0, 1500.0) << v;
  EXPECT_EQ(rng.below(1), 0u);
  Rng a(42), b(42);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a(), b());
}

}  // namespace
}  // namespace rdx::workload
