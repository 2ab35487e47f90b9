#include "replication/key_turns.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rdx::replication {
namespace {

using rpc::Task;

// A writer as the executor runs one: wait for the key, "write" (suspending until the test releases it), leave.
struct Writer {
  KeyTurns& gate;
  uint64_t h;
  std::string name;
  std::vector<std::string>& log;
  bool is_set = false;
  bool node_wide = false;
  bool release = false;  // the test lets the write finish
  bool done = false;
  WriteResult reply;

  Task<void> run(rpc::Scheduler& sched) {
    KeyTurns::SetWaiter me{"k"};
    if (!gate.try_enter(h, node_wide)) co_await gate.enter(h, node_wide, is_set ? &me : nullptr);
    if (me.absorbed) {
      reply = me.result;
      log.push_back(name + " absorbed:" + reply.error);
      done = true;
      co_return;
    }
    log.push_back(name + " writes");
    while (!release) co_await sched.yield();
    WriteResult r;
    r.error = name;  // marks whose write the reply came from
    gate.leave(h);
    gate.finish(me, r);
    reply = r;
    done = true;
  }
};

void run_all(rpc::Scheduler& s, int rounds = 50) {
  for (int i = 0; i < rounds; ++i) s.run_ready();
}

TEST(KeyTurns, WritersOfOneKeyTakeTurnsInArrivalOrder) {
  rpc::Scheduler sched;
  KeyTickets tickets;
  KeyTurns gate(sched, tickets);
  std::vector<std::string> log;
  Writer a{gate, 1, "a", log}, b{gate, 1, "b", log}, c{gate, 1, "c", log}, other{gate, 2, "other", log};
  rpc::spawn(a.run(sched));
  rpc::spawn(b.run(sched));
  rpc::spawn(c.run(sched));
  rpc::spawn(other.run(sched));  // another key: does not wait
  run_all(sched);
  EXPECT_EQ(log, (std::vector<std::string>{"a writes", "other writes"}));
  a.release = true;
  run_all(sched);
  EXPECT_EQ(log.back(), "b writes");
  b.release = c.release = other.release = true;
  run_all(sched);
  EXPECT_EQ(log.back(), "c writes");
  EXPECT_TRUE(a.done && b.done && c.done && other.done);
}

TEST(KeyTurns, WaitingSetsOfOneKeyAreWrittenOnceByTheLast) {
  rpc::Scheduler sched;
  KeyTickets tickets;
  KeyTurns gate(sched, tickets);
  std::vector<std::string> log;
  Writer holder{gate, 7, "holder", log};
  Writer s1{gate, 7, "s1", log, true}, s2{gate, 7, "s2", log, true}, s3{gate, 7, "s3", log, true};
  Writer incr{gate, 7, "incr", log};  // not a SET: ends the run
  Writer s4{gate, 7, "s4", log, true};
  for (Writer* w : {&holder, &s1, &s2, &s3, &incr, &s4}) rpc::spawn(w->run(sched));
  run_all(sched);
  holder.release = true;
  run_all(sched);
  // s3 leads the run s1..s3; s1 and s2 wait for its write.
  EXPECT_EQ(log, (std::vector<std::string>{"holder writes", "s3 writes"}));
  EXPECT_FALSE(s1.done || s2.done);
  s3.release = true;
  run_all(sched);
  EXPECT_TRUE(s1.done && s2.done && s3.done);
  EXPECT_EQ(s1.reply.error, "s3");
  EXPECT_EQ(s2.reply.error, "s3");
  EXPECT_EQ(log[2], "incr writes");  // then the INCR, then s4 on its own
  incr.release = s4.release = true;
  run_all(sched);
  EXPECT_EQ(log.back(), "s4 writes");
  EXPECT_EQ(s4.reply.error, "s4");
}

TEST(KeyTurns, NodeWideTurnsAcrossWorkers) {
  rpc::Scheduler sched_a, sched_b;  // two workers of one node
  KeyTickets tickets;
  KeyTurns gate_a(sched_a, tickets), gate_b(sched_b, tickets);
  std::vector<std::string> log;
  const uint64_t h = 0xfeedull;
  Writer a{gate_a, h, "a", log, false, true}, b{gate_b, h, "b", log, false, true};
  Writer local{gate_b, h, "local", log, false, false};  // a single-replica write only waits within its worker
  rpc::spawn(a.run(sched_a));
  rpc::spawn(b.run(sched_b));
  run_all(sched_a);
  run_all(sched_b);
  EXPECT_EQ(log, (std::vector<std::string>{"a writes"}));  // b polls its ticket
  a.release = true;
  run_all(sched_a);
  run_all(sched_b);
  EXPECT_EQ(log.back(), "b writes");
  b.release = true;
  run_all(sched_b);
  EXPECT_TRUE(a.done && b.done);
  rpc::spawn(local.run(sched_b));
  EXPECT_EQ(log.back(), "local writes");
  local.release = true;
  run_all(sched_b);
  // The stripe is free again: a new node-wide writer gets it at once.
  EXPECT_TRUE(gate_a.try_enter(h, true));
  gate_a.leave(h);
}

}  // namespace
}  // namespace rdx::replication
