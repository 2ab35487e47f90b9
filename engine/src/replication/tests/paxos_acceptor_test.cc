// Classic Paxos's acceptor rules (replication/paxos/acceptor.h) on a real store table: promises, accepts, the
// committed slot, the registry of committed operations, and the merge a recovering member does.
#include <gtest/gtest.h>

#include "replication/paxos/acceptor.h"
#include "replication/quorum_register.h"
#include "store/tests/test_util.h"

namespace rdx::replication::paxos {
namespace {

constexpr RmwId kA{7, 100}, kB{8, 200}, kC{9, 300}, kAsking{10, 400};

uint64_t slot_tag(uint64_t slot, bool deleted = false) { return pack_tag(slot, 1, deleted); }

struct Node {
  store::testing::TestTable table = store::testing::make_table(1 << 22);
  store::Session session = table->session();
  Acceptor acceptor;

  AcceptorReply prepare(uint64_t slot, uint64_t ballot, uint64_t base_tag, std::string_view base, RmwId asking) {
    return acceptor.prepare(*table.table, session, "k", slot, ballot, base_tag, base, asking);
  }
  AcceptorReply accept(uint64_t slot, uint64_t ballot, std::string_view blob) {
    return acceptor.accept(*table.table, session, "k", slot, ballot, slot_tag(slot), blob);
  }
  Code commit(uint64_t slot, std::string_view blob) {
    return acceptor.commit(*table.table, session, "k", slot_tag(slot), blob);
  }
};

TEST(PaxosAcceptor, PromisesOnlyHigherBallotsAndReportsWhatItAccepted) {
  Node n;
  const uint64_t b1 = make_ballot(0, 1, 1), b2 = make_ballot(0, 2, 0), b3 = make_ballot(0, 2, 1);
  EXPECT_EQ(n.prepare(1, b2, 0, "", kC).verdict, Verdict::kPromised);
  AcceptorReply lower = n.prepare(1, b1, 0, "", kC);
  EXPECT_EQ(lower.verdict, Verdict::kNack);
  EXPECT_EQ(lower.ballot, b2);
  EXPECT_EQ(n.accept(1, b1, make_blob(kA, "x")).verdict, Verdict::kNack) << "accepted under a lower ballot";
  EXPECT_EQ(n.accept(1, b2, make_blob(kA, "x")).verdict, Verdict::kAccepted);
  AcceptorReply again = n.prepare(1, b3, 0, "", kC);
  ASSERT_EQ(again.verdict, Verdict::kPromised);
  EXPECT_EQ(again.accepted.ballot, b2);
  EXPECT_EQ(again.accepted.tag, slot_tag(1));
  EXPECT_EQ(blob_id(again.accepted.blob), kA);
  EXPECT_EQ(blob_value(again.accepted.blob), "x");
  EXPECT_EQ(n.prepare(1, b3, 0, "", kC).verdict, Verdict::kNack) << "the same ballot promised twice";
}

TEST(PaxosAcceptor, AHigherPriorityWinsOverAHigherRound) {
  Node n;
  const uint64_t starved = make_ballot(3, 1, 0), fresh = make_ballot(0, 1000, 2);
  EXPECT_GT(starved, fresh);
  EXPECT_EQ(ballot_priority(starved), 3u);
  EXPECT_EQ(ballot_round(fresh), 1000u);
  EXPECT_EQ(n.prepare(1, fresh, 0, "", kC).verdict, Verdict::kPromised);
  EXPECT_EQ(n.prepare(1, starved, 0, "", kC).verdict, Verdict::kPromised);
  EXPECT_EQ(n.accept(1, fresh, make_blob(kA, "x")).verdict, Verdict::kNack);
  EXPECT_EQ(n.accept(1, starved, make_blob(kB, "y")).verdict, Verdict::kAccepted);
}

TEST(PaxosAcceptor, ACommittedSlotIsAnsweredWithTheCommittedValueAndItsOpenStateGoes) {
  Node n;
  EXPECT_EQ(n.accept(1, make_ballot(0, 1, 1), make_blob(kA, "x")).verdict, Verdict::kAccepted);
  EXPECT_EQ(n.acceptor.open_slots(), 1u);
  ASSERT_EQ(n.commit(1, make_blob(kA, "x")), Code::kOk);
  EXPECT_EQ(n.acceptor.open_slots(), 0u);
  for (const AcceptorReply& r :
       {n.prepare(1, make_ballot(0, 9, 1), 0, "", kC), n.accept(1, make_ballot(0, 9, 1), make_blob(kB, "y"))}) {
    ASSERT_EQ(r.verdict, Verdict::kCommitted);
    EXPECT_EQ(r.tag, slot_tag(1));
    EXPECT_EQ(blob_value(r.blob), "x");
  }
  // An older commit arriving late changes nothing.
  ASSERT_EQ(n.commit(2, make_blob(kB, "y")), Code::kOk);
  ASSERT_EQ(n.commit(1, make_blob(kA, "x")), Code::kOk);
  std::string stored;
  uint64_t tag = 0;
  ASSERT_EQ(n.table->get(n.session, "k", &stored, &tag), store::OpStatus::kOk);
  EXPECT_EQ(tag, slot_tag(2));
  EXPECT_EQ(blob_value(stored), "y");
}

TEST(PaxosAcceptor, TakesPartInASlotOnlyOnceItCommittedThePreviousOne) {
  Node n;
  EXPECT_EQ(n.accept(3, make_ballot(0, 1, 1), make_blob(kA, "x")).verdict, Verdict::kBehind);
  // A prepare carries the proposer's value of the slot before, installed first.
  EXPECT_EQ(n.prepare(3, make_ballot(0, 1, 1), slot_tag(2), make_blob(kB, "base"), kA).verdict, Verdict::kPromised);
  std::string stored;
  uint64_t tag = 0;
  ASSERT_EQ(n.table->get(n.session, "k", &stored, &tag), store::OpStatus::kOk);
  EXPECT_EQ(tag, slot_tag(2));
  EXPECT_EQ(n.accept(3, make_ballot(0, 1, 1), make_blob(kA, "x")).verdict, Verdict::kAccepted);
}

TEST(PaxosAcceptor, CommittedOperationsAreRegisteredForGood) {
  Node n;
  EXPECT_FALSE(n.acceptor.registered(kA));
  ASSERT_EQ(n.commit(1, make_blob(kA, "x")), Code::kOk);
  EXPECT_TRUE(n.acceptor.registered(kA));
  EXPECT_TRUE(n.acceptor.registered(RmwId{kA.lane, kA.seq - 1})) << "an earlier operation of the lane is over";
  EXPECT_FALSE(n.acceptor.registered(RmwId{kA.lane, kA.seq + 1}));
  ASSERT_EQ(n.commit(2, make_blob(kB, "")), Code::kOk);  // later slots keep it
  EXPECT_TRUE(n.acceptor.registered(kA));
  EXPECT_EQ(n.prepare(3, make_ballot(0, 1, 1), slot_tag(2), make_blob(kB, ""), kA).verdict, Verdict::kRegistered);
  // A base installed by a prepare registers its operation too.
  Node m;
  EXPECT_EQ(m.prepare(2, make_ballot(0, 1, 1), slot_tag(1), make_blob(kC, "c"), kA).verdict, Verdict::kPromised);
  EXPECT_TRUE(m.acceptor.registered(kC));
}

TEST(PaxosAcceptor, MergeTakesTheHigherPromiseAndTheValueAcceptedUnderTheHigherBallot) {
  Node a, b;
  ASSERT_EQ(a.commit(1, make_blob(kC, "base")), Code::kOk);
  ASSERT_EQ(b.commit(1, make_blob(kC, "base")), Code::kOk);
  EXPECT_EQ(a.accept(2, make_ballot(0, 3, 1), make_blob(kA, "a")).verdict, Verdict::kAccepted);
  EXPECT_EQ(b.accept(2, make_ballot(0, 2, 1), make_blob(kB, "b")).verdict, Verdict::kAccepted);
  EXPECT_EQ(b.prepare(2, make_ballot(0, 5, 1), slot_tag(1), make_blob(kC, "base"), kAsking).verdict,
            Verdict::kPromised);
  Node fresh;  // a restarted member: copies the records, then both others' open slots
  ASSERT_EQ(fresh.commit(1, make_blob(kC, "base")), Code::kOk);
  for (Node* from : {&a, &b}) {
    std::vector<Acceptor::OpenSlot> slots;
    std::vector<RmwId> ids;
    for (size_t s = 0; s < Acceptor::kStripes; ++s) from->acceptor.export_stripe(s, &slots, &ids);
    ASSERT_EQ(slots.size(), 1u);
    for (const auto& open : slots) fresh.acceptor.merge(*fresh.table.table, fresh.session, open);
    for (const RmwId& id : ids) fresh.acceptor.merge_registration(id);
  }
  EXPECT_TRUE(fresh.acceptor.registered(kC));
  EXPECT_EQ(fresh.prepare(2, make_ballot(0, 4, 1), slot_tag(1), make_blob(kC, "base"), kAsking).verdict, Verdict::kNack)
      << "b's promise of round 5 was not taken";
  AcceptorReply r = fresh.prepare(2, make_ballot(0, 6, 1), slot_tag(1), make_blob(kC, "base"), kAsking);
  ASSERT_EQ(r.verdict, Verdict::kPromised);
  EXPECT_EQ(r.accepted.ballot, make_ballot(0, 3, 1));
  EXPECT_EQ(blob_id(r.accepted.blob), kA);
  // An open slot that is committed here already is not taken.
  Node done;
  ASSERT_EQ(done.commit(2, make_blob(kB, "b")), Code::kOk);
  done.acceptor.merge(*done.table.table, done.session, Acceptor::OpenSlot{"k", SlotState{2, make_ballot(0, 9, 1), {}}});
  EXPECT_EQ(done.acceptor.open_slots(), 0u);
}

TEST(PaxosAcceptor, BlobsCarryTheirOperation) {
  const std::string b = make_blob(kB, "value");
  EXPECT_EQ(b.size(), kRmwIdBytes + 5);
  EXPECT_EQ(blob_id(b), kB);
  EXPECT_EQ(blob_value(b), "value");
  EXPECT_EQ(blob_value(make_blob(kA, "")), "");
}

}  // namespace
}  // namespace rdx::replication::paxos
