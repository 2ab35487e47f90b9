#pragma once
// State shared by the workers of one node (everything else is per worker). All of it is atomics: workers read it on
// hot paths without locks.
#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
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
  NodeShared(size_t nodes, size_t workers) : member_state_(nodes), oldest_commit_gen_(workers) {
    for (auto& s : member_state_) s.store(MemberState::kInSync);
    for (auto& g : oldest_commit_gen_) g.store(kNoCommit);
  }

  MemberState member(uint16_t node) const { return member_state_[node].load(std::memory_order_acquire); }
  // Every change starts a new membership generation (see commits_drained).
  void set_member(uint16_t node, MemberState s) {
    member_state_[node].store(s, std::memory_order_release);
    member_gen_.fetch_add(1, std::memory_order_acq_rel);
  }

  // Commits record the membership generation they started in (the replica set they replicate to was chosen then).
  // A joining replica may copy a snapshot once no commit of an older generation is still running on any worker.
  static constexpr uint64_t kNoCommit = std::numeric_limits<uint64_t>::max();
  uint64_t member_gen() const { return member_gen_.load(std::memory_order_acquire); }
  void publish_oldest_commit(uint16_t worker, uint64_t gen) {
    oldest_commit_gen_[worker].store(gen, std::memory_order_release);
  }
  bool commits_drained(uint64_t gen) const {
    for (const auto& g : oldest_commit_gen_)
      if (g.load(std::memory_order_acquire) < gen) return false;
    return true;
  }

  // While this node copies a snapshot (joining), deletes it applies leave tombstones so an older snapshot record
  // arriving later cannot resurrect the key. Both paths hold the same mutex, so neither interleaves the other.
  bool joining() const { return joining_.load(std::memory_order_acquire); }
  void set_joining(bool v) {
    std::lock_guard<std::mutex> lk(tomb_mu_);
    joining_.store(v, std::memory_order_release);
    if (!v) tombstones_.clear();
  }
  // Runs `remove` (which deletes `key` at `version`) and remembers the tombstone when joining.
  template <typename F>
  void delete_with_tombstone(std::string_view key, uint64_t version, F remove) {
    if (!joining()) return remove();
    std::lock_guard<std::mutex> lk(tomb_mu_);
    remove();
    uint64_t& t = tombstones_[std::string(key)];
    t = std::max(t, version);
  }
  // Applies a snapshot record unless a tombstone at least as new exists; returns whether it ran.
  template <typename F>
  bool apply_snapshot(std::string_view key, uint64_t version, F apply) {
    std::lock_guard<std::mutex> lk(tomb_mu_);
    auto it = tombstones_.find(std::string(key));
    if (it != tombstones_.end() && it->second >= version) return false;
    apply();
    return true;
  }

  // True once this node's copy of its shard is complete (fresh cluster start, or after a snapshot copy).
  bool in_sync() const { return in_sync_.load(std::memory_order_acquire); }
  void set_in_sync(bool v) { in_sync_.store(v, std::memory_order_release); }
  // True while this node keeps a copy that was complete once (it was in sync, then got excluded): the copy must
  // survive until a member in sync can replace it, and is the shard's data if no member is in sync any more.
  bool holds_copy() const { return holds_copy_.load(std::memory_order_acquire); }
  void set_holds_copy(bool v) { holds_copy_.store(v, std::memory_order_release); }
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  void set_stopping() { stopping_.store(true, std::memory_order_release); }

 private:
  std::vector<std::atomic<MemberState>> member_state_;
  std::atomic<uint64_t> member_gen_{1};
  std::vector<std::atomic<uint64_t>> oldest_commit_gen_;  // per worker
  std::atomic<bool> joining_{false};
  std::mutex tomb_mu_;
  std::unordered_map<std::string, uint64_t> tombstones_;
  std::atomic<bool> in_sync_{false};
  std::atomic<bool> holds_copy_{false};
  std::atomic<bool> stopping_{false};
};

}  // namespace rdx::server
