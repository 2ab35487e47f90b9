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

// Which member of a shard is its primary, and since which view: views only grow, and a view names one primary.
// Packed in one word so that a reader never sees the primary of one view with the number of another.
struct ShardView {
  uint64_t view = 0;
  uint16_t primary = 0;
  uint64_t packed() const { return view << 16 | primary; }
  static ShardView unpack(uint64_t w) { return {w >> 16, static_cast<uint16_t>(w & 0xffff)}; }
  bool operator==(const ShardView&) const = default;
};

class Membership {
 public:
  // `initial_primaries`: per shard, the primary of view 0 (the topology's first member).
  Membership(size_t nodes, size_t workers, const std::vector<uint16_t>& initial_primaries = {})
      : member_state_(nodes),
        oldest_write_gen_(workers),
        adopted_epoch_(workers),
        leases_(nodes),
        suspected_(nodes),
        suspicions_(nodes),
        views_(initial_primaries.size()),
        votes_(initial_primaries.size()),
        vote_fence_(initial_primaries.size()),
        resigned_view_(initial_primaries.size()) {
    for (auto& s : member_state_) s.store(MemberState::kInSync);
    for (auto& g : oldest_write_gen_) g.store(kNoWrite);
    for (auto& e : adopted_epoch_) e.store(0);
    for (size_t s = 0; s < views_.size(); ++s) {
      views_[s].store(ShardView{0, initial_primaries[s]}.packed());
      vote_fence_[s].store(0);
      resigned_view_[s].store(kNoView);
    }
  }

  // --- views (primary failover): which member of each shard is its primary ---
  ShardView view(uint32_t shard) const { return ShardView::unpack(views_[shard].load(std::memory_order_acquire)); }
  uint16_t primary(uint32_t shard) const { return view(shard).primary; }
  // Installs `v` if it is newer than the shard's view here (a new generation); false when it is not.
  bool install_view(uint32_t shard, ShardView v) {
    std::lock_guard<std::mutex> lk(transitions_mu_);
    if (v.view <= view(shard).view) return false;
    views_[shard].store(v.packed(), std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    return true;
  }
  // Installs a view another node reported. A member of that shard other than its new primary may hold writes the
  // new primary never had (sent by the old one, never committed): it stops serving at once and copies its shard
  // again (the notice tells recovery that its copy must go). True when the view was new here.
  bool learn_view(uint32_t shard, ShardView v, bool own_shard, uint16_t self) {
    if (!install_view(shard, v)) return false;
    if (own_shard && v.primary != self && copy_again_on_new_view_.load(std::memory_order_acquire)) {
      set_in_sync(false);  // at once: no read of this copy, which may hold such a write, once the view is known
      note_excluded();
    }
    return true;
  }
  // Whether learn_view sends a member that is not the new primary out of sync (above). A protocol whose new leader
  // reconciles the members' copies itself turns it off (zab: it gathers a majority's copies before it serves).
  void set_copy_again_on_new_view(bool on) { copy_again_on_new_view_.store(on, std::memory_order_release); }
  // One vote per view and shard: true when this node has not voted in `view` yet (or voted for `candidate`), and
  // the view is newer than the installed one.
  bool vote(uint32_t shard, uint64_t v, uint16_t candidate) {
    std::lock_guard<std::mutex> lk(transitions_mu_);
    if (v <= view(shard).view) return false;
    ShardView& mine = votes_[shard];
    if (v < mine.view || (v == mine.view && mine.primary != candidate)) return false;
    mine = ShardView{v, candidate};
    vote_fence_[shard].store(v, std::memory_order_release);
    return true;
  }
  // The vote this node gave last for `shard` (view 0: none).
  ShardView last_vote(uint32_t shard) {
    std::lock_guard<std::mutex> lk(transitions_mu_);
    return votes_[shard];
  }
  // Elections this node won (metrics).
  void note_promotion() { promotions_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t promotions() const { return promotions_.load(std::memory_order_relaxed); }
  // The vote's fence: once it voted in a view, a node takes no replicated write of an older one (the winner must
  // have them all), until the fence is lifted (the campaign was lost, or this node copied its shard again and holds
  // what the current primary holds). 0: no fence. The vote itself stays (last_vote): one per view.
  uint64_t vote_fence(uint32_t shard) const { return vote_fence_[shard].load(std::memory_order_acquire); }
  void lift_vote_fence(uint32_t shard) { vote_fence_[shard].store(0, std::memory_order_release); }

  MemberState member(uint16_t node) const { return member_state_[node].load(std::memory_order_acquire); }
  // Every change starts a new generation (see writes_drained); workers notice it and tell their protocols.
  void set_member(uint16_t node, MemberState s) {
    std::lock_guard<std::mutex> lk(transitions_mu_);
    if (s == MemberState::kJoining) {  // it rejoins: it may hold leases from this node again, and serve
      leases_.restore(node);
      forget_resignation(node);
    }
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
    if (leases_.enabled() && !resigned(node) && now < leases_.granted_until(node)) return Exclusion::kWait;
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
  bool writes_drained(uint64_t gen) const { return every_at_least(oldest_write_gen_, gen); }

  // The topology epoch each worker runs (workers adopt a new one on their own ticks). A join is taken only once
  // every worker runs an epoch that has the joiner: a worker still on an older one would leave it out of writes.
  void note_adopted_epoch(uint16_t worker, uint32_t epoch) {
    adopted_epoch_[worker].store(epoch, std::memory_order_release);
  }
  bool every_worker_runs(uint32_t epoch) const { return every_at_least(adopted_epoch_, epoch); }

  // --- handover: a primary that is asked to stop hands its shard to another member first ---
  // Node::hand_over requests it; the replication protocol's worker 0 takes it (kUnderWay) and marks it kDone when
  // another member leads, or when there was nothing to hand over, or it gave up.
  enum class Handover : uint8_t { kNone, kRequested, kUnderWay, kDone };
  Handover handover() const { return handover_.load(std::memory_order_acquire); }
  void set_handover(Handover h) { handover_.store(h, std::memory_order_release); }
  // This node stopped serving as its shard's primary for good (serves_as_primary): it is handing its shard over.
  bool resigning() const { return resigning_.load(std::memory_order_acquire); }
  void set_resigning() { resigning_.store(true, std::memory_order_release); }
  // The primary of `v`, this node's current view of `shard`, said it serves no more (it is handing over).
  void note_resigned(uint32_t shard, ShardView v) {
    resigned_view_[shard].store(v.packed(), std::memory_order_release);
  }
  // `node` rejoins or reconnects (a new process, or a link that came back): a resignation of an earlier life must not
  // let it be excluded without its leases being waited out, nor count as lost for an election.
  void forget_resignation(uint16_t node) {
    for (auto& r : resigned_view_) {
      uint64_t v = r.load(std::memory_order_acquire);
      if (v != kNoView && ShardView::unpack(v).primary == node) r.compare_exchange_strong(v, kNoView);
    }
  }
  // Whether `node` resigned as the primary of a shard in the view installed here: it is lost for an election, and
  // the leases this node granted it need not be waited out to exclude it (try_exclude). A resignation is tied to its
  // view: once another view is installed it says nothing (the node may lead again later).
  bool resigned(uint16_t node) const {
    for (size_t s = 0; s < views_.size(); ++s) {
      const uint64_t r = resigned_view_[s].load(std::memory_order_acquire);
      if (r != kNoView && r == views_[s].load(std::memory_order_acquire) && ShardView::unpack(r).primary == node)
        return true;
    }
    return false;
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
  template <typename T>
  static bool every_at_least(const std::vector<std::atomic<T>>& per_worker, T floor) {
    for (const auto& v : per_worker)
      if (v.load(std::memory_order_acquire) < floor) return false;
    return true;
  }

  std::mutex transitions_mu_;  // member state changes and lease grants (rare: never on a client's path)
  std::vector<std::atomic<MemberState>> member_state_;
  std::atomic<uint64_t> generation_{1};
  std::vector<std::atomic<uint64_t>> oldest_write_gen_;  // per worker
  std::vector<std::atomic<uint32_t>> adopted_epoch_;     // per worker
  std::atomic<bool> in_sync_{false};
  std::atomic<bool> copy_again_on_new_view_{true};
  std::atomic<bool> stopping_{false};
  Leases leases_;
  std::atomic<bool> excluded_noticed_{false};
  std::vector<std::atomic<bool>> suspected_;
  std::vector<std::atomic<uint64_t>> suspicions_;
  std::atomic<Handover> handover_{Handover::kNone};
  std::atomic<bool> resigning_{false};
  std::vector<std::atomic<uint64_t>> views_;       // ShardView::packed, per shard
  std::vector<ShardView> votes_;                   // per shard, under transitions_mu_
  std::vector<std::atomic<uint64_t>> vote_fence_;  // per shard (vote_fence)
  static constexpr uint64_t kNoView = std::numeric_limits<uint64_t>::max();
  std::vector<std::atomic<uint64_t>> resigned_view_;  // per shard: ShardView::packed of a resigned primary, or kNoView
  std::atomic<uint64_t> promotions_{0};
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
