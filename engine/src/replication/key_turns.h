#pragma once
// Writes of one key take turns at the place that orders them (primary-backup: the key's primary) instead of racing:
// a writer waits for its turn, it never fails because of contention (Redis never fails a SET or an INCR on a hot
// key). Two levels:
//   - per worker: the first writer of a key holds it, later writers wait in arrival order (no polling);
//   - per node, only for keys with remote replicas (a hold lasts a network round trip): the worker's holder also
//     takes a ticket of a node-wide ticket lock striped by key hash (KeyTickets, which the node's protocol part owns
//     and its workers share), so the workers of this node alternate fairly.
//     The waiter checks its ticket once per worker-loop iteration. Single-replica writes finish in microseconds
//     without a network wait, where a rare cross-worker collision on the record lock is cheaper to retry.
// Blind puts (a plain SET) that queue up behind a write of the same key are combined: when the key is handed on, a
// run of waiting puts is written once, with the last value, and every put of the run gets that write's result.
// Concurrent blind writes may take effect in any order, and one applied immediately after another leaves no state
// anyone can read, so this is what a serial execution could have produced; a replicated hot key then costs one
// round trip per run, not per SET.
// Keys are identified by hash: a collision only makes two writes wait for each other (and never combines two keys:
// a combined run is only formed from puts of one key, checked by key comparison).
#include <array>
#include <atomic>
#include <coroutine>
#include <cstdint>
#include <deque>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "replication/ops.h"
#include "rpc/task.h"

namespace rdx::replication {

// The node-wide ticket locks of KeyTurns, striped by key hash: one per node, shared by its workers.
class KeyTickets {
 public:
  struct Stripe {
    std::atomic<uint32_t> next{0};
    std::atomic<uint32_t> serving{0};
  };
  Stripe& stripe(uint64_t h) { return stripes_[(h ^ (h >> 29)) % stripes_.size()]; }

 private:
  std::array<Stripe, 4096> stripes_;
};

class KeyTurns {
 public:
  KeyTurns(rpc::Scheduler& sched, KeyTickets& tickets) : sched_(sched), tickets_(tickets) {}

  static uint64_t hash(std::string_view key) { return std::hash<std::string_view>{}(key); }

  // A plain SET waiting for its key: it may be combined into a later SET of the run (absorbed), which then hands it
  // the reply of the one write.
  struct SetWaiter {
    std::string_view key;
    bool absorbed = false;
    WriteResult result;                 // of the combined write, when absorbed
    std::vector<SetWaiter*> followers;  // the SETs this one writes for, when it leads a run
    std::coroutine_handle<> handle;
  };

  // Takes key h at once if nobody on this worker (and, if node_wide, nobody on this node) holds it.
  bool try_enter(uint64_t h, bool node_wide);
  // Waits for key h (after try_enter failed). A SET passes `set`: it returns either holding the key (write, then
  // leave() and finish(set, result)) or absorbed, with set->result already filled.
  rpc::Task<void> enter(uint64_t h, bool node_wide, SetWaiter* set = nullptr);
  // After the leader of a combined run wrote: replies to the SETs it wrote for.
  void finish(SetWaiter& leader, const WriteResult& result);
  // Gives key h up; the next waiter of this worker is resumed from the scheduler.
  void leave(uint64_t h);

  // The whole turn of one write: waits for `key` (a plain SET may be absorbed into a later SET's write and answered
  // with its result, `combined`), runs `write` (a callable returning rpc::Task<WriteResult>), gives the key up and
  // answers the SETs it wrote for.
  template <typename Write>
  rpc::Task<WriteResult> in_turn(std::string_view key, bool node_wide, const Rmw& op, Write write) {
    const uint64_t h = hash(key);
    SetWaiter me{key};
    if (!try_enter(h, node_wide)) co_await enter(h, node_wide, op.is_blind_put() ? &me : nullptr);
    if (me.absorbed) {
      me.result.combined = true;
      co_return std::move(me.result);
    }
    WriteResult r = co_await write();
    leave(h);
    finish(me, r);
    co_return r;
  }

  // Leaves the key when destroyed (a coroutine that holds a key across several co_awaits).
  class Hold {
   public:
    Hold(KeyTurns& g, uint64_t h) : g_(g), h_(h) {}
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() { g_.leave(h_); }

   private:
    KeyTurns& g_;
    uint64_t h_;
  };

 private:
  struct Waiting {
    std::coroutine_handle<> handle;
    SetWaiter* set;  // null: not a combinable SET
  };
  struct Holder {
    std::deque<Waiting> waiters;
    bool node_wide = false;  // holds a node-wide ticket, released on leave
  };
  struct Waiter {
    KeyTurns* g;
    uint64_t h;
    SetWaiter* set;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> c) { g->holders_[h].waiters.push_back({c, set}); }
    void await_resume() const noexcept {}
  };
  rpc::Task<void> take_ticket(uint64_t h);

  rpc::Scheduler& sched_;
  KeyTickets& tickets_;
  std::unordered_map<uint64_t, Holder> holders_;
};

}  // namespace rdx::replication
