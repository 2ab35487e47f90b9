#pragma once
// This node's view of the cluster, shared by the workers of one node (everything else is per worker). All of it is
// atomics: workers read it on hot paths without locks. The replication protocol writes it (it decides who is in
// sync, who is excluded and when this node serves); every family reads it.
#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

#include "cluster/leases.h"

namespace rdx::cluster {

// How this node sees another data node (it coordinates writes to all of them).
enum class MemberState : uint8_t {
  kInSync = 0,   // receives every write; counted for acknowledgements
  kJoining = 1,  // receives every write while it copies a snapshot; counted too (it applies them)
  kFailed = 2,   // unreachable, so it misses writes: excluded until it rejoins
};
const char* member_state_name(MemberState s);

class Membership {
 public:
  Membership(size_t nodes, size_t workers)
      : member_state_(nodes), oldest_write_gen_(workers), leases_(nodes), suspected_(nodes), suspicions_(nodes) {
    for (auto& s : member_state_) s.store(MemberState::kInSync);
    for (auto& g : oldest_write_gen_) g.store(kNoWrite);
  }

  MemberState member(uint16_t node) const { return member_state_[node].load(std::memory_order_acquire); }
  // Every change starts a new generation (see writes_drained); workers notice it and tell their protocols.
  void set_member(uint16_t node, MemberState s) {
    std::lock_guard<std::mutex> lk(transitions_mu_);
    if (s == MemberState::kJoining) leases_.restore(node);  // it rejoins: it may hold leases from this node again
    member_state_[node].store(s, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  // The steps of an exclusion (cluster/leases.h), serialized with grants: after Leases::revoke(node), kWait until
  // every lease granted to `node` has ended, then kExcluded (marked kFailed); kAbandoned when a rejoin restored
  // `node` meanwhile (it is being included again) or another exclusion was first.
  enum class Exclusion : uint8_t { kWait, kExcluded, kAbandoned };
  Exclusion try_exclude(uint16_t node, Leases::Clock::time_point now) {
    std::lock_guard<std::mutex> lk(transitions_mu_);
    if (!leases_.revoked(node) || member(node) == MemberState::kFailed) return Exclusion::kAbandoned;
    if (leases_.enabled() && now < leases_.granted_until(node)) return Exclusion::kWait;
    member_state_[node].store(MemberState::kFailed, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    return Exclusion::kExcluded;
  }
  // Answers a heartbeat of `node`: a lease, unless it is excluded or being excluded.
  bool grant_lease(uint16_t node, Leases::Clock::time_point now) {
    std::lock_guard<std::mutex> lk(transitions_mu_);
    return member(node) != MemberState::kFailed && leases_.grant(node, now);
  }
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // Writes (transaction commits and single-key writes) record the generation they chose their replicas in. A
  // member that joins may copy a snapshot once no write of an older generation is still running on any worker.
  static constexpr uint64_t kNoWrite = std::numeric_limits<uint64_t>::max();
  void publish_oldest_write(uint16_t worker, uint64_t gen) {
    oldest_write_gen_[worker].store(gen, std::memory_order_release);
  }
  bool writes_drained(uint64_t gen) const {
    for (const auto& g : oldest_write_gen_)
      if (g.load(std::memory_order_acquire) < gen) return false;
    return true;
  }

  // True once this node's copy of its shard is complete (fresh cluster start, or after recovery): it serves.
  bool in_sync() const { return in_sync_.load(std::memory_order_acquire); }
  void set_in_sync(bool v) { in_sync_.store(v, std::memory_order_release); }
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  void set_stopping() { stopping_.store(true, std::memory_order_release); }

  // Leases with the other data nodes (leases.h): who may exclude whom when, and whether a backup may read its copy.
  Leases& leases() { return leases_; }
  const Leases& leases() const { return leases_; }
  // Set when a member answered a heartbeat with "you are excluded": this node may have missed writes. The
  // replication protocol takes it (and recovers).
  void note_excluded() { excluded_noticed_.store(true, std::memory_order_release); }
  bool take_excluded_notice() { return excluded_noticed_.exchange(false, std::memory_order_acq_rel); }
  // The failure detector's verdicts: whether it suspects each node now, and how often it did (metrics, /readyz).
  void set_suspected(uint16_t node, bool suspected) {
    if (suspected && !suspected_[node].exchange(true, std::memory_order_relaxed))
      suspicions_[node].fetch_add(1, std::memory_order_relaxed);
    if (!suspected) suspected_[node].store(false, std::memory_order_relaxed);
  }
  bool suspected(uint16_t node) const { return suspected_[node].load(std::memory_order_relaxed); }
  uint64_t suspicions(uint16_t node) const { return suspicions_[node].load(std::memory_order_relaxed); }

 private:
  std::mutex transitions_mu_;  // member state changes and lease grants (rare: never on a client's path)
  std::vector<std::atomic<MemberState>> member_state_;
  std::atomic<uint64_t> generation_{1};
  std::vector<std::atomic<uint64_t>> oldest_write_gen_;  // per worker
  std::atomic<bool> in_sync_{false};
  std::atomic<bool> stopping_{false};
  Leases leases_;
  std::atomic<bool> excluded_noticed_{false};
  std::vector<std::atomic<bool>> suspected_;
  std::vector<std::atomic<uint64_t>> suspicions_;
};

inline const char* member_state_name(MemberState s) {
  switch (s) {
    case MemberState::kInSync:
      return "in-sync";
    case MemberState::kJoining:
      return "joining";
    case MemberState::kFailed:
      return "excluded";
  }
  return "?";
}

}  // namespace rdx::cluster
