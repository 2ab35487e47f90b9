#include "checker/checker.h"

#include <gtest/gtest.h>

#include <chrono>

#include "checker/tests/history_gen.h"

namespace rdx::checker {
namespace {

using txn::ReadRecord;
using txn::TxRecord;
using txn::WriteRecord;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr size_t kLargeHistory = 100'000;  // sanitizers are ~10x slower; the release tier checks a million
#else
constexpr size_t kLargeHistory = 1'000'000;
#endif

TxRecord tx(uint64_t id, int64_t start, int64_t end, std::vector<ReadRecord> reads, std::vector<WriteRecord> writes,
            bool committed = true, std::string type = "t") {
  TxRecord r;
  r.id = id;
  r.type = std::move(type);
  r.start_ns = start;
  r.end_ns = end;
  r.committed = committed;
  r.reads = std::move(reads);
  r.writes = std::move(writes);
  return r;
}

CheckReport check_ok(const std::vector<TxRecord>& h, const CheckOptions& o = {}) {
  auto r = check_history(h, o);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(r.value()) : CheckReport{};
}

uint64_t count(const CheckReport& r, Anomaly a) { return r.counts[static_cast<size_t>(a)]; }

// Exactly one violation, of kind `a`; returns it.
Violation only(const CheckReport& r, Anomaly a) {
  EXPECT_EQ(r.total(), 1u) << format_report(r);
  EXPECT_EQ(count(r, a), 1u) << format_report(r);
  if (r.violations.empty()) return {};
  return r.violations.front();
}

TEST(Checker, EmptyAndTrivialHistoriesPass) {
  EXPECT_TRUE(check_ok({}).ok());
  auto r = check_ok({tx(1, 0, 10, {{"x", 0}}, {{"x", 1}}), tx(2, 20, 30, {{"x", 1}}, {})});
  EXPECT_TRUE(r.ok()) << format_report(r);
  EXPECT_EQ(r.stats.committed, 2u);
}

TEST(Checker, SerialRandomHistoriesPass) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    testing::GenOptions g;
    g.txns = 20000;
    g.keys = 50 * seed;  // small key spaces: long version chains, many deletes and absent reads
    g.seed = seed;
    auto r = check_ok(testing::generate_history(g));
    EXPECT_TRUE(r.ok()) << "seed " << seed << "\n" << format_report(r);
    EXPECT_EQ(r.stats.unresolved_absent_reads, 0u);  // serial: real time pins every absent read
  }
}

TEST(Checker, ConcurrentSerializableHistoriesPass) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    testing::GenOptions g;
    g.txns = 20000;
    g.keys = 1000;
    g.seed = seed;
    g.overlap = true;
    auto r = check_ok(testing::generate_history(g));
    EXPECT_TRUE(r.ok()) << "seed " << seed << "\n" << format_report(r);
  }
}

TEST(Checker, OverlappingDisjointTransactionsPass) {
  std::vector<TxRecord> h;
  for (uint64_t i = 0; i < 100; ++i) {  // all concurrent, each on its own key
    std::string k = "k" + std::to_string(i);
    h.push_back(tx(i + 1, 0, 1000, {{k, 0}}, {{k, 1}}));
  }
  EXPECT_TRUE(check_ok(h).ok());
}

TEST(Checker, LostUpdateIsGSingle) {
  auto r = check_ok({tx(1, 0, 10, {}, {{"x", 1}}),  // x = 1
                     tx(2, 20, 50, {{"x", 1}}, {{"x", 2}}), tx(3, 20, 50, {{"x", 1}}, {{"x", 3}})});
  Violation v = only(r, Anomaly::kGSingle);
  ASSERT_EQ(v.cycle.size(), 2u);
  // T2 -rw[x: read v1, overwritten by v2]-> ... : T3 read v1, T2 wrote v2, then T3 wrote v3 after T2.
  const CycleStep& rw = v.cycle[0].kind == EdgeKind::kRW ? v.cycle[0] : v.cycle[1];
  const CycleStep& ww = v.cycle[0].kind == EdgeKind::kRW ? v.cycle[1] : v.cycle[0];
  EXPECT_EQ(rw.key, "x");
  EXPECT_EQ(rw.from.id, 3u);
  EXPECT_EQ(rw.to.id, 2u);
  EXPECT_EQ(rw.from_version, 1u);
  EXPECT_EQ(rw.to_version, 2u);
  EXPECT_EQ(ww.kind, EdgeKind::kWW);
  EXPECT_EQ(ww.from_version, 2u);
  EXPECT_EQ(ww.to_version, 3u);
  EXPECT_NE(v.message.find("x"), std::string::npos);
}

TEST(Checker, WriteSkewIsG2) {
  // x + y must stay >= 0; each reads both, each withdraws from a different one.
  auto r = check_ok({tx(1, 0, 10, {}, {{"x", 1}, {"y", 1}}), tx(2, 20, 50, {{"x", 1}, {"y", 1}}, {{"x", 2}}),
                     tx(3, 20, 50, {{"x", 1}, {"y", 1}}, {{"y", 2}})});
  Violation v = only(r, Anomaly::kG2);
  EXPECT_EQ(v.cycle.size(), 2u);
  for (const auto& s : v.cycle) EXPECT_EQ(s.kind, EdgeKind::kRW);
}

TEST(Checker, AbortedReadIsG1a) {
  auto r = check_ok({tx(1, 0, 10, {}, {{"x", 1}}), tx(2, 20, 30, {{"x", 1}}, {{"x", 2}}, /*committed=*/false),
                     tx(3, 25, 40, {{"x", 2}}, {})});
  Violation v = only(r, Anomaly::kAbortedRead);
  ASSERT_EQ(v.txns.size(), 2u);
  EXPECT_EQ(v.txns[0].id, 3u);
  EXPECT_EQ(v.txns[1].id, 2u);
}

TEST(Checker, CircularInformationFlowIsG1c) {
  // T1 and T2 each read the other's write.
  auto r = check_ok({tx(1, 0, 50, {{"y", 1}}, {{"x", 1}}), tx(2, 0, 50, {{"x", 1}}, {{"y", 1}})});
  Violation v = only(r, Anomaly::kG1c);
  for (const auto& s : v.cycle) EXPECT_EQ(s.kind, EdgeKind::kWR);
}

TEST(Checker, WriteCycleIsG0) {
  auto r = check_ok({tx(1, 0, 50, {}, {{"x", 1}, {"y", 2}}), tx(2, 0, 50, {}, {{"x", 2}, {"y", 1}})});
  only(r, Anomaly::kG0);
}

TEST(Checker, StaleReadAfterCommitViolatesRealTimeOnly) {
  std::vector<TxRecord> h{tx(1, 0, 10, {}, {{"x", 1}}), tx(2, 20, 30, {}, {{"x", 2}}),
                          tx(3, 40, 50, {{"x", 1}}, {})};  // T3 starts after T2 ended, yet sees x = 1
  Violation v = only(check_ok(h), Anomaly::kRealTime);
  bool has_rt = false;
  for (const auto& s : v.cycle) has_rt |= s.kind == EdgeKind::kRT;
  EXPECT_TRUE(has_rt);
  CheckOptions serializable_only;
  serializable_only.check_real_time = false;
  EXPECT_TRUE(check_ok(h, serializable_only).ok());
  CheckOptions skew;
  skew.rt_slack_ns = 15;  // clocks may disagree by 15 ns: T2 and T3 could have overlapped
  EXPECT_TRUE(check_ok(h, skew).ok());
}

TEST(Checker, FracturedReadIsGSingle) {
  // T2 writes x and y atomically; T3 sees T2's x but the old y.
  auto r = check_ok({tx(1, 0, 10, {}, {{"x", 1}, {"y", 1}}), tx(2, 20, 60, {}, {{"x", 2}, {"y", 2}}),
                     tx(3, 30, 70, {{"x", 2}, {"y", 1}}, {})});
  only(r, Anomaly::kGSingle);
}

TEST(Checker, DuplicateVersionsAreReported) {
  auto r = check_ok({tx(1, 0, 10, {}, {{"x", 1}}), tx(2, 0, 10, {}, {{"x", 1}})});
  Violation v = only(r, Anomaly::kDuplicateWrite);
  EXPECT_EQ(v.txns.size(), 2u);
}

TEST(Checker, UnwrittenDeletedAndOwnWriteReads) {
  EXPECT_EQ(count(check_ok({tx(1, 0, 10, {}, {{"x", 1}}), tx(2, 20, 30, {{"x", 7}}, {})}), Anomaly::kUnwrittenRead),
            1u);
  EXPECT_EQ(count(check_ok({tx(1, 0, 10, {}, {{"x", 1}}), tx(2, 20, 30, {}, {{"x", 2, true}}),
                            tx(3, 40, 50, {{"x", 2}}, {})}),
                  Anomaly::kDeletedRead),
            1u);
  EXPECT_EQ(count(check_ok({tx(1, 0, 10, {{"x", 1}}, {{"x", 1}})}), Anomaly::kOwnWriteRead), 1u);
}

TEST(Checker, InitialVersionsComeFromLoadOrInference) {
  // Inferred: the run starts on data loaded without recording (x at version 5, below every recorded write).
  std::vector<TxRecord> h{tx(1, 0, 10, {{"x", 5}}, {{"x", 6}}), tx(2, 20, 30, {{"x", 6}}, {})};
  EXPECT_TRUE(check_ok(h).ok());
  CheckOptions strict;
  strict.infer_initial = false;
  EXPECT_EQ(count(check_ok(h, strict), Anomaly::kUnwrittenRead), 1u);
  // Two different "initial" versions cannot both be right.
  h.push_back(tx(3, 20, 30, {{"x", 4}}, {}));
  EXPECT_EQ(count(check_ok(h), Anomaly::kUnwrittenRead), 1u);
  // A recorded load phase fixes the initial version; its records are not checked as transactions.
  std::vector<TxRecord> loaded{tx(10, 0, 1, {}, {{"x", 4}}, true, "load"), tx(1, 2, 10, {{"x", 4}}, {{"x", 6}}),
                               tx(2, 20, 30, {{"x", 6}}, {})};
  auto r = check_ok(loaded);
  EXPECT_TRUE(r.ok()) << format_report(r);
  EXPECT_EQ(r.stats.load, 1u);
  loaded.push_back(tx(3, 20, 30, {{"x", 5}}, {}));  // neither loaded nor written
  EXPECT_EQ(count(check_ok(loaded), Anomaly::kUnwrittenRead), 1u);
}

TEST(Checker, AbsentReadsOfNeverWrittenKeysAreInitialState) {
  // T1 sees x absent, then T2 creates it: fine. T3 sees it absent after T2 committed: a stale read.
  std::vector<TxRecord> h{tx(1, 0, 10, {{"x", 0}}, {}), tx(2, 20, 30, {}, {{"x", 1}})};
  EXPECT_TRUE(check_ok(h).ok());
  h.push_back(tx(3, 40, 50, {{"x", 0}}, {}));
  auto r = check_ok(h);
  EXPECT_EQ(count(r, Anomaly::kAbsentRead) + count(r, Anomaly::kRealTime), 1u) << format_report(r);
}

TEST(Checker, AbsentReadsResolveToDeletes) {
  // x: v1 (T1), deleted as v2 (T2), recreated as v3 (T4). T3 sees it absent between T2 and T4: fine.
  std::vector<TxRecord> h{tx(1, 0, 10, {}, {{"x", 1}}), tx(2, 20, 30, {{"x", 1}}, {{"x", 2, true}}),
                          tx(3, 40, 50, {{"x", 0}}, {}), tx(4, 60, 70, {{"x", 0}}, {{"x", 3}})};
  auto r = check_ok(h);
  EXPECT_TRUE(r.ok()) << format_report(r);
  EXPECT_EQ(r.stats.unresolved_absent_reads, 0u);
  // A reader that starts after v3 was committed cannot see the key absent.
  h.push_back(tx(5, 80, 90, {{"x", 0}}, {}));
  EXPECT_EQ(count(check_ok(h), Anomaly::kAbsentRead), 1u);
  // A key that existed from the load and was never deleted cannot read as absent.
  std::vector<TxRecord> loaded{tx(10, 0, 1, {}, {{"y", 3}}, true, "load"), tx(1, 5, 10, {{"y", 0}}, {})};
  EXPECT_EQ(count(check_ok(loaded), Anomaly::kAbsentRead), 1u);
}

TEST(Checker, AbsentReadModifyWriteMustReplaceAnAbsentState) {
  // Insert-if-absent by two transactions: the second saw x absent but its write replaced the first one's version.
  auto r = check_ok({tx(1, 0, 50, {{"x", 0}}, {{"x", 1}}), tx(2, 0, 50, {{"x", 0}}, {{"x", 2}})});
  Violation v = only(r, Anomaly::kAbsentRead);
  EXPECT_EQ(v.txns.size(), 2u);
  // Re-insert after a delete is fine.
  auto ok = check_ok({tx(1, 0, 10, {{"x", 0}}, {{"x", 1}}), tx(2, 20, 30, {{"x", 1}}, {{"x", 2, true}}),
                      tx(3, 40, 50, {{"x", 0}}, {{"x", 3}})});
  EXPECT_TRUE(ok.ok()) << format_report(ok);
}

TEST(Checker, AmbiguousAbsentReadsAreCountedNotGuessed) {
  // Two deletes, both concurrent with the reader: either could be the state it saw.
  auto r = check_ok({tx(1, 0, 10, {}, {{"x", 1}}), tx(2, 20, 100, {}, {{"x", 2, true}}), tx(3, 20, 100, {}, {{"x", 3}}),
                     tx(4, 20, 100, {}, {{"x", 4, true}}), tx(5, 20, 100, {{"x", 0}}, {})});
  EXPECT_TRUE(r.ok()) << format_report(r);
  EXPECT_EQ(r.stats.unresolved_absent_reads, 1u);
}

TxRecord unknown(TxRecord r) {
  r.committed = false;
  r.unknown = true;
  return r;
}

// A transaction whose coordinator could not learn its outcome counts as committed once a committed read saw its
// write, and is then checked like any other; otherwise it is left out.
TEST(Checker, UnknownOutcomesCountAsCommittedWhenAReadSawTheirWrite) {
  const TxRecord t1 = tx(1, 0, 10, {}, {{"x", 1}});
  const TxRecord u2 = unknown(tx(2, 20, 30, {{"x", 1}}, {{"x", 2}}));
  auto seen = check_ok({t1, u2, tx(3, 40, 50, {{"x", 2}}, {})});
  EXPECT_TRUE(seen.ok()) << format_report(seen);
  EXPECT_EQ(seen.stats.committed, 3u);
  EXPECT_EQ(seen.stats.unknown, 1u);
  EXPECT_EQ(seen.stats.unknown_committed, 1u);

  // Nobody read x@2: left out, so a later read of x@1 is no stale read.
  auto unseen = check_ok({t1, u2, tx(3, 40, 50, {{"x", 1}}, {})});
  EXPECT_TRUE(unseen.ok()) << format_report(unseen);
  EXPECT_EQ(unseen.stats.committed, 2u);
  EXPECT_EQ(unseen.stats.unknown_committed, 0u);

  // Counted committed, it has no end: T4, which started after its coordinator gave up, may still read the version
  // it replaced (a new primary may have shown its write only later).
  auto late = check_ok({t1, u2, tx(4, 60, 70, {{"x", 1}}, {}), tx(3, 80, 90, {{"x", 2}}, {})});
  EXPECT_TRUE(late.ok()) << format_report(late);
  // But its dependencies are checked: T3 read x@1 too and wrote over U2's version (a lost update).
  only(check_ok({t1, u2, tx(3, 20, 40, {{"x", 1}}, {{"x", 3}}), tx(4, 30, 60, {{"x", 2}}, {})}), Anomaly::kGSingle);

  // Chains: U5 read U2's y@1; a committed read of U5's write proves both.
  const TxRecord u2y = unknown(tx(2, 20, 30, {}, {{"y", 1}}));
  const TxRecord u5 = unknown(tx(5, 35, 45, {{"y", 1}}, {{"z", 1}}));
  auto chain = check_ok({u2y, u5, tx(6, 50, 60, {{"z", 1}}, {})});
  EXPECT_TRUE(chain.ok()) << format_report(chain);
  EXPECT_EQ(chain.stats.unknown_committed, 2u);

  // A version a committed transaction created explains its reads: the unknown writer of the same version stays out
  // (no duplicate write).
  auto taken = check_ok({t1, u2, tx(7, 20, 30, {{"x", 1}}, {{"x", 2}}), tx(3, 40, 50, {{"x", 2}}, {})});
  EXPECT_TRUE(taken.ok()) << format_report(taken);
  EXPECT_EQ(taken.stats.unknown_committed, 0u);

  // An unknown write nobody committed can explain is still an unwritten read when its version differs.
  only(check_ok({t1, u2, tx(3, 40, 50, {{"x", 3}}, {})}), Anomaly::kUnwrittenRead);

  // Ruled out: U8 also created y@1, which committed T9 created; its x@2 explains nothing, and T3's read of it is an
  // unwritten read (no duplicate write, no dependency through U8).
  const TxRecord u8 = unknown(tx(8, 20, 30, {}, {{"x", 2}, {"y", 1}}));
  auto ruled = check_ok({t1, u8, tx(9, 0, 10, {}, {{"y", 1}}), tx(3, 40, 50, {{"x", 2}}, {})});
  EXPECT_EQ(ruled.stats.unknown_committed, 0u);
  only(ruled, Anomaly::kUnwrittenRead);

  // Two unknown writers of x@2: the read proves neither.
  const TxRecord u10 = unknown(tx(10, 20, 30, {{"x", 1}}, {{"x", 2}}));
  auto ambiguous = check_ok({t1, u2, u10, tx(3, 40, 50, {{"x", 2}}, {})});
  EXPECT_EQ(ambiguous.stats.unknown_committed, 0u);
  EXPECT_EQ(count(ambiguous, Anomaly::kDuplicateWrite), 0u) << format_report(ambiguous);

  // Only committed reads (and those of promoted records) prove: an aborted reader does not.
  auto aborted = check_ok({t1, u2, tx(3, 40, 50, {{"x", 2}}, {}, /*committed=*/false)});
  EXPECT_EQ(aborted.stats.unknown_committed, 0u);
  EXPECT_TRUE(aborted.ok()) << format_report(aborted);
}

TEST(Checker, MalformedInputIsAnError) {
  auto dup = check_history({tx(1, 0, 10, {}, {}), tx(1, 0, 10, {}, {})});
  ASSERT_FALSE(dup.is_ok());
  EXPECT_NE(dup.status().message().find("id 1"), std::string::npos);
  EXPECT_FALSE(check_history({tx(1, 10, 0, {}, {})}).is_ok());
  EXPECT_FALSE(check_history({tx(1, 0, 10, {}, {{"x", 0}})}).is_ok());
  EXPECT_TRUE(check_history({tx(1, 0, 10, {}, {{"x", 0}}, /*committed=*/false)}).is_ok());
  TxRecord both = tx(2, 0, 10, {}, {});
  both.unknown = true;
  EXPECT_FALSE(check_history({both}).is_ok());
}

TEST(Checker, ExamplesAreCappedButAllCounted) {
  std::vector<TxRecord> h;
  for (uint64_t i = 0; i < 50; ++i) {  // 50 independent lost updates
    std::string k = "k" + std::to_string(i);
    int64_t t = static_cast<int64_t>(i) * 100;
    h.push_back(tx(3 * i + 1, t, t + 10, {}, {{k, 1}}));
    h.push_back(tx(3 * i + 2, t + 20, t + 50, {{k, 1}}, {{k, 2}}));
    h.push_back(tx(3 * i + 3, t + 20, t + 50, {{k, 1}}, {{k, 3}}));
  }
  CheckOptions o;
  o.max_examples = 3;
  auto r = check_ok(h, o);
  EXPECT_EQ(count(r, Anomaly::kGSingle), 50u);
  EXPECT_EQ(r.violations.size(), 3u);
}

TEST(Checker, ManyStaleReadsAreCountedOneByOne) {
  // Stale reads all over a long history link up into one big strongly connected component through the real-time
  // chain; each must still be reported on its own.
  testing::GenOptions g;
  g.txns = 50000;
  g.keys = 500;
  g.delete_rate = 0;
  auto h = testing::generate_history(g);
  size_t planted = 0;
  for (size_t i = 100; i < h.size(); i += 97) {
    auto& r = h[i];
    if (!r.committed || r.reads.size() != 1 || !r.writes.empty() || r.reads[0].version < 2) continue;
    r.reads[0].version -= 1;  // serial history: the overwriting transaction ended before this one started
    ++planted;
  }
  ASSERT_GT(planted, 50u);
  auto r = check_ok(h);
  EXPECT_EQ(count(r, Anomaly::kRealTime), planted) << format_report(r);
  EXPECT_EQ(r.total(), planted);
}

TEST(Checker, LargeHistoryIsCheckedQuicklyAndAPlantedStaleReadFound) {
  testing::GenOptions g;
  g.txns = kLargeHistory;
  g.keys = kLargeHistory / 4;
  g.overlap = true;
  g.seed = 7;
  auto h = testing::generate_history(g);
  auto t0 = std::chrono::steady_clock::now();
  auto r = check_ok(h);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.ok()) << format_report(r);
  std::printf("checked %zu transactions (%lu reads, %lu versions, %lu edges) in %.2f s: %s", h.size(),
              static_cast<unsigned long>(r.stats.reads), static_cast<unsigned long>(r.stats.versions),
              static_cast<unsigned long>(r.stats.edges), s, format_report(r).c_str());

  // Plant one stale read in the middle: a committed reader sees a version that was overwritten long before it began.
  auto wrote = [](const TxRecord& t, const ReadRecord& read) {
    for (const auto& w : t.writes) {
      if (w.key == read.key && w.version == read.version) return true;
    }
    return false;
  };
  size_t victim = 0;
  for (size_t i = h.size() / 2; i < h.size() && victim == 0; ++i) {
    if (!h[i].committed || h[i].reads.empty() || h[i].reads[0].version < 2 || !h[i].writes.empty()) continue;
    size_t w = i - 1;
    while (!(h[w].committed && wrote(h[w], h[i].reads[0]))) --w;
    if (h[w].end_ns < h[i].start_ns) victim = i;  // its writer had finished: the older version is stale in real time
  }
  ASSERT_NE(victim, 0u);
  h[victim].reads[0].version -= 1;
  auto bad = check_ok(h);
  EXPECT_EQ(bad.total(), 1u) << format_report(bad);
}

}  // namespace
}  // namespace rdx::checker
