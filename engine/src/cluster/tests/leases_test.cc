#include "cluster/leases.h"

#include <gtest/gtest.h>

#include <thread>

namespace rdx::cluster {
namespace {

using Clock = Leases::Clock;
using std::chrono::milliseconds;

TEST(Leases, ABackupHoldsItsLeaseOnlyWhileEveryPeerGrantedOne) {
  Leases l(4);
  l.configure(true, milliseconds(500), {0, 1, 3});  // node 2 is this node
  const auto t0 = Clock::now();
  EXPECT_FALSE(l.held(t0)) << "no lease before the first answers";
  l.renew(0, t0 + milliseconds(500));
  l.renew(1, t0 + milliseconds(300));
  EXPECT_FALSE(l.held(t0)) << "node 3 has not answered";
  l.renew(3, t0 + milliseconds(400));
  EXPECT_TRUE(l.held(t0 + milliseconds(299)));
  EXPECT_FALSE(l.held(t0 + milliseconds(300))) << "the earliest lease bounds them all";
  l.lose(0);  // node 0 answered "excluded"
  EXPECT_FALSE(l.held(t0));
}

TEST(Leases, DisabledLeasesAreAlwaysHeldAndNeverDelayAnExclusion) {
  Leases l(3);
  l.configure(false, milliseconds(500), {1, 2});
  EXPECT_TRUE(l.held(Clock::now()));
  EXPECT_LE(l.granted_until(1), Clock::now());
}

TEST(Leases, AGrantOutlastsTheLeaseItGivesAndARevocationRefusesNewOnes) {
  Leases l(2);
  l.configure(true, milliseconds(100), {1});
  const auto t0 = Clock::now();
  EXPECT_TRUE(l.grant(1, t0));
  // The holder counts from when it sent (<= t0); the granter waits past t0 + duration, plus a drift margin.
  EXPECT_GE(l.granted_until(1), t0 + milliseconds(110));
  l.revoke(1);
  EXPECT_FALSE(l.grant(1, t0 + milliseconds(50))) << "a revoked node gets no lease";
  // A refused grant may still have moved the end: the revoker waits for it, which is safe.
  EXPECT_GE(l.granted_until(1), t0 + milliseconds(160));
  l.restore(1);
  EXPECT_TRUE(l.grant(1, t0 + milliseconds(60)));
  EXPECT_GE(l.granted_until(1), t0 + milliseconds(160)) << "a grant never shortens the promise";
}

// The race the comment in leases.h describes: a grant racing a revocation is either refused, or the revoker sees its
// end. Repeated on two threads; a lease given after the revoker read the end would break exclusion.
TEST(Leases, AGrantRacingARevocationIsRefusedOrWaitedFor) {
  for (int round = 0; round < 2000; ++round) {
    Leases l(2);
    l.configure(true, milliseconds(100), {1});
    const auto now = Clock::now();
    bool granted = false;
    Clock::time_point seen;
    std::thread granter([&] { granted = l.grant(1, now); });
    std::thread revoker([&] {
      l.revoke(1);
      seen = l.granted_until(1);
    });
    granter.join();
    revoker.join();
    if (granted) {
      ASSERT_GE(seen, now + milliseconds(100)) << "round " << round << ": a lease the revoker did not wait for";
    }
  }
}

}  // namespace
}  // namespace rdx::cluster
