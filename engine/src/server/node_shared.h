#pragma once
// State shared by the workers of one node (everything else is per worker). All of it is atomics: workers read it on
// hot paths without locks.
#include <atomic>
#include <cstdint>
#include <vector>

namespace rdx::server {

// This node's view of every other node (it coordinates writes to all of them).
enum class MemberState : uint8_t {
  kInSync = 0,   // receives every write; counted for acknowledgements
  kJoining = 1,  // receives every write while it copies a snapshot; counted too (it applies them)
  kFailed = 2,   // unreachable, so it misses writes: excluded until it rejoins
};

class NodeShared {
 public:
  explicit NodeShared(size_t nodes) : member_state_(nodes) {
    for (auto& s : member_state_) s.store(MemberState::kInSync);
  }

  // Raises the clock past a version that exists in the shard (records copied during recovery, replicated writes),
  // so a restarted primary never hands out a version it or a predecessor already used.
  void observe_version(uint64_t v) {
    uint64_t c = version_clock_.load(std::memory_order_relaxed);
    while (c < v && !version_clock_.compare_exchange_weak(c, v, std::memory_order_relaxed)) {
    }
  }

  // A fresh version for a write at the primary: newer than `current` and than any version this node handed out.
  uint64_t next_version(uint64_t current) {
    uint64_t v = version_clock_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (v <= current) {
      v = current + 1;
      observe_version(v);
    }
    return v;
  }

  MemberState member(uint16_t node) const { return member_state_[node].load(std::memory_order_acquire); }
  void set_member(uint16_t node, MemberState s) { member_state_[node].store(s, std::memory_order_release); }

  // True once this node's copy of its shard is complete (fresh cluster start, or after a snapshot copy).
  bool in_sync() const { return in_sync_.load(std::memory_order_acquire); }
  void set_in_sync(bool v) { in_sync_.store(v, std::memory_order_release); }
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  void set_stopping() { stopping_.store(true, std::memory_order_release); }


 private:
  std::atomic<uint64_t> version_clock_{0};
  std::vector<std::atomic<MemberState>> member_state_;
  std::atomic<bool> in_sync_{false};
  std::atomic<bool> stopping_{false};
};

}  // namespace rdx::server
