#include "cluster/leases.h"

#include <gtest/gtest.h>

#include <thread>

#include "cluster/membership.h"

namespace rdx::cluster {
namespace {

using Clock = Leases::Clock;
using std::chrono::milliseconds;

TEST(Leases, AReadIsCoveredOnlyWhileEveryPeerGrantedALease) {
  Leases l(4);
  l.configure(true, milliseconds(500), {0, 1, 3});  // node 2 is this node
  const auto t0 = Clock::now();
  EXPECT_FALSE(l.held(t0)) << "no lease before the first answers";
  l.renew(0, t0);
  l.renew(1, t0 - milliseconds(200));
  EXPECT_FALSE(l.held(t0)) << "node 3 has not answered";
  l.renew(3, t0 - milliseconds(100));
  const uint64_t ticket = l.ticket();
  EXPECT_TRUE(l.covers(ticket, t0 + milliseconds(299)));
  EXPECT_FALSE(l.covers(ticket, t0 + milliseconds(300))) << "the earliest lease bounds them all";
  l.renew(1, t0 + milliseconds(100));  // overlaps the previous lease from node 1: the same generation
  EXPECT_TRUE(l.covers(ticket, t0 + milliseconds(350)));
  l.lose(0);  // node 0 answered "excluded"
  EXPECT_FALSE(l.covers(ticket, t0));
}

// A read that began while a lease had lapsed is not covered by a lease renewed after it began (the renewal does not
// overlap the lapsed lease: a new generation), even though the time after the read is inside the new lease.
TEST(Leases, ALeaseRenewedAfterALapseDoesNotCoverAReadThatBeganBefore) {
  Leases l(2);
  l.configure(true, milliseconds(100), {1});
  const auto t0 = Clock::now();
  l.renew(1, t0);
  const uint64_t during_lapse = l.ticket();  // the read begins at t0 + 150 ms, after the lease ended at t0 + 100 ms
  l.renew(1, t0 + milliseconds(170));
  EXPECT_FALSE(l.covers(during_lapse, t0 + milliseconds(180)));
  EXPECT_TRUE(l.covers(l.ticket(), t0 + milliseconds(180)));
}

TEST(Leases, DisabledLeasesCoverEveryReadAndNeverDelayAnExclusion) {
  Leases l(3);
  l.configure(false, milliseconds(500), {1, 2});
  EXPECT_TRUE(l.held(Clock::now()));
  EXPECT_LE(l.granted_until(1), Clock::now());
}

TEST(Leases, ARestartedNodeHonoursTheGrantsOfItsEarlierIncarnation) {
  Leases l(2);
  const auto before = Clock::now();
  l.configure(true, milliseconds(100), {1});
  EXPECT_GE(l.granted_until(1), before + milliseconds(110));
}

TEST(Leases, AGrantOutlastsTheLeaseItGivesAndARevokedNodeGetsNone) {
  Leases l(2);
  l.configure(true, milliseconds(100), {1});
  const auto t0 = Clock::now() + milliseconds(500);  // past the start-up grant
  EXPECT_TRUE(l.grant(1, t0));
  // The holder counts from when it sent (<= t0); the granter waits past t0 + duration, plus a drift margin.
  EXPECT_GE(l.granted_until(1), t0 + milliseconds(110));
  l.revoke(1);
  EXPECT_FALSE(l.grant(1, t0 + milliseconds(50))) << "a revoked node gets no lease";
  EXPECT_LT(l.granted_until(1), t0 + milliseconds(160)) << "a refused grant must not prolong the exclusion";
  l.restore(1);
  EXPECT_TRUE(l.grant(1, t0 + milliseconds(60)));
  EXPECT_GE(l.granted_until(1), t0 + milliseconds(160));
}

TEST(Membership, AnExclusionWaitsForTheGrantsAndYieldsToARejoin) {
  Membership m(2, 1);
  m.leases().configure(true, milliseconds(50), {1});
  const auto t0 = Clock::now() + milliseconds(200);
  ASSERT_TRUE(m.grant_lease(1, t0));
  m.leases().revoke(1);
  EXPECT_EQ(m.try_exclude(1, t0 + milliseconds(10)), Membership::Exclusion::kWait);
  EXPECT_FALSE(m.grant_lease(1, t0 + milliseconds(20))) << "no grant while being excluded";
  EXPECT_EQ(m.try_exclude(1, t0 + milliseconds(60)), Membership::Exclusion::kExcluded);
  EXPECT_EQ(m.member(1), MemberState::kFailed);
  EXPECT_FALSE(m.grant_lease(1, t0 + milliseconds(70)));
  EXPECT_EQ(m.try_exclude(1, t0 + milliseconds(70)), Membership::Exclusion::kAbandoned) << "excluded already";

  m.set_member(1, MemberState::kJoining);  // it rejoins: grants again
  EXPECT_TRUE(m.grant_lease(1, t0 + milliseconds(80)));
  m.leases().revoke(1);
  m.set_member(1, MemberState::kJoining);  // a rejoin while an exclusion waits: the exclusion gives up
  EXPECT_EQ(m.try_exclude(1, t0 + milliseconds(500)), Membership::Exclusion::kAbandoned);
  EXPECT_EQ(m.member(1), MemberState::kJoining);
}

// A primary that resigned (handover) is excluded without its grants being waited out, but only in the view it
// resigned in, and not once it came back (a restart, or a link up again).
TEST(Membership, AResignedPrimaryIsExcludedAtOnceOnlyInItsViewAndLife) {
  Membership m(3, 1, {0});
  m.leases().configure(true, milliseconds(50), {0, 2});
  const auto t0 = Clock::now() + milliseconds(200);
  ASSERT_TRUE(m.grant_lease(0, t0));
  EXPECT_FALSE(m.resigned(0));
  m.note_resigned(0, ShardView{0, 2});  // not the view installed here: says nothing
  EXPECT_FALSE(m.resigned(2));
  m.note_resigned(0, m.view(0));
  EXPECT_TRUE(m.resigned(0));
  m.leases().revoke(0);
  EXPECT_EQ(m.try_exclude(0, t0 + milliseconds(1)), Membership::Exclusion::kExcluded) << "no wait for its grant";

  Membership back(3, 1, {0});
  back.leases().configure(true, milliseconds(50), {0, 2});
  ASSERT_TRUE(back.grant_lease(0, t0));
  back.note_resigned(0, back.view(0));
  back.forget_resignation(0);  // it came back
  EXPECT_FALSE(back.resigned(0));
  back.leases().revoke(0);
  EXPECT_EQ(back.try_exclude(0, t0 + milliseconds(1)), Membership::Exclusion::kWait);

  Membership moved(3, 1, {0});
  moved.note_resigned(0, moved.view(0));
  ASSERT_TRUE(moved.install_view(0, ShardView{1, 2}));  // its successor leads: the old word is moot
  EXPECT_FALSE(moved.resigned(0));
  EXPECT_FALSE(moved.resigned(2));
}

// Grants racing an exclusion on other threads (as heartbeats are answered by any worker): once the exclusion is
// done, no grant may end later than the moment it was done, and none may be given afterwards.
TEST(Membership, GrantsRacingAnExclusionNeverOutliveIt) {
  for (int round = 0; round < 300; ++round) {
    Membership m(2, 1);
    m.leases().configure(true, milliseconds(2), {1});
    std::atomic<bool> go{false}, done{false};
    std::atomic<int> late_grants{0};
    Clock::time_point excluded_at{};
    std::thread granter([&] {
      while (!go.load()) {
      }
      for (int after = 0; after < 100;) {
        const bool was_done = done.load();  // a grant asked for once the exclusion is done must be refused
        if (m.grant_lease(1, Clock::now()) && was_done) late_grants.fetch_add(1);
        if (was_done) ++after;
      }
    });
    std::thread excluder([&] {
      while (!go.load()) {
      }
      m.leases().revoke(1);
      while (m.try_exclude(1, Clock::now()) == Membership::Exclusion::kWait) {
      }
      excluded_at = Clock::now();
      done.store(true);
    });
    go.store(true);
    excluder.join();
    granter.join();
    ASSERT_EQ(m.member(1), MemberState::kFailed);
    ASSERT_LE(m.leases().granted_until(1), excluded_at) << "round " << round;
    ASSERT_EQ(late_grants.load(), 0) << "round " << round;
  }
}

}  // namespace
}  // namespace rdx::cluster
