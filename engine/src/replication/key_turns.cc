#include "replication/key_turns.h"

namespace rdx::replication {

namespace {
// A ticket only when nobody holds or waits for the stripe.
bool try_ticket(KeyTickets::Stripe& s) {
  uint32_t serving = s.serving.load(std::memory_order_acquire);
  return s.next.compare_exchange_strong(serving, serving + 1, std::memory_order_acq_rel);
}
}  // namespace

bool KeyTurns::try_enter(uint64_t h, bool node_wide) {
  if (holders_.contains(h)) return false;
  if (node_wide && !try_ticket(tickets_.stripe(h))) return false;
  holders_[h].node_wide = node_wide;
  return true;
}

rpc::Task<void> KeyTurns::enter(uint64_t h, bool node_wide, SetWaiter* set) {
  if (holders_.contains(h)) {
    co_await Waiter{this, h, set};  // leave() hands this worker's turn over to us, or the run's leader finishes us
    if (set != nullptr && set->absorbed) co_return;
  } else {
    holders_.try_emplace(h);
  }
  if (!node_wide) co_return;
  co_await take_ticket(h);
  holders_[h].node_wide = true;
}

rpc::Task<void> KeyTurns::take_ticket(uint64_t h) {
  KeyTickets::Stripe& s = tickets_.stripe(h);
  uint32_t mine = s.next.fetch_add(1, std::memory_order_acq_rel);
  // Yields (one worker-loop iteration each) rather than timers: a worker blocked in poll() does not wake for its
  // timers yet, so a short sleep could last its whole 5 ms poll timeout.
  while (s.serving.load(std::memory_order_acquire) != mine) co_await sched_.yield();
}

void KeyTurns::leave(uint64_t h) {
  auto it = holders_.find(h);
  if (it == holders_.end()) return;
  if (it->second.node_wide) {
    tickets_.stripe(h).serving.fetch_add(1, std::memory_order_release);
    it->second.node_wide = false;
  }
  if (it->second.waiters.empty()) {
    holders_.erase(it);
    return;
  }
  auto& waiters = it->second.waiters;
  // A run of SETs of the same key at the front: the last one writes for all of them.
  size_t run = 0;
  while (run < waiters.size() && waiters[run].set != nullptr && waiters[run].set->key == waiters.front().set->key)
    ++run;
  if (run > 1) {
    SetWaiter* leader = waiters[run - 1].set;
    for (size_t i = 0; i + 1 < run; ++i) {
      waiters[i].set->absorbed = true;
      waiters[i].set->handle = waiters[i].handle;
      leader->followers.push_back(waiters[i].set);
    }
    waiters.erase(waiters.begin(), waiters.begin() + static_cast<std::ptrdiff_t>(run - 1));
  }
  std::coroutine_handle<> next = waiters.front().handle;
  waiters.pop_front();
  sched_.ready(next);
}

void KeyTurns::finish(SetWaiter& leader, const WriteResult& result) {
  for (SetWaiter* f : leader.followers) {
    f->result = result;
    sched_.ready(f->handle);
  }
  leader.followers.clear();
}

}  // namespace rdx::replication
