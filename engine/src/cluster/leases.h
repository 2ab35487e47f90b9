#pragma once
// Leases between the data nodes of a cluster, renewed by the failure detector's heartbeats (failure_detector.h).
//
// Node X answering a heartbeat of node B grants B a lease: X will not exclude B (commit a write without B) before the
// grant ends. B counts the lease from the moment it *sent* that heartbeat, and X from the moment it answered, so B's
// lease always ends first (same clock rate; X adds a margin for drift). A backup serves reads from its own copy only
// while it holds a lease from every other data node, since any of them coordinates writes it must see: a backup that
// was paused or cut off therefore stops serving its copy before anybody can have committed a write without it.
//
// Exclusion (X stops counting B): revoke(B) first, so no new grant is given, then wait until granted_until(B) has
// passed (exclude_after_lease in failure_detector.h). A grant and a revocation race safely: grant() publishes the new
// end and then checks the revocation, revoke() publishes the revocation and then reads the end (both sequentially
// consistent), so either the revoker waits for that grant or the grant is refused.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

namespace rdx::cluster {

class Leases {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Leases(size_t nodes) : granted_until_(nodes), held_until_(nodes), revoked_(nodes) {
    for (auto& g : granted_until_) g.store(0);
    for (auto& h : held_until_) h.store(0);
    for (auto& r : revoked_) r.store(false);
  }

  // Called once before the node serves: `peers` are the other data nodes (whose leases a backup needs). Disabled
  // leases (no failure detection) make held() always true and granted_until() always past.
  // `ignore_for_reads` plants a bug for tests (held() always true).
  void configure(bool enabled, std::chrono::milliseconds duration, std::vector<uint16_t> peers,
                 bool ignore_for_reads = false) {
    enabled_ = enabled;
    ignore_for_reads_ = ignore_for_reads;
    duration_ = duration;
    peers_ = std::move(peers);
    recompute_held();
  }
  bool enabled() const { return enabled_; }
  std::chrono::milliseconds duration() const { return duration_; }

  // --- the granting side (X) ---
  // Grants `node` a lease that ends `duration` (+ a tenth for clock drift) from `now`; false when it is revoked.
  bool grant(uint16_t node, Clock::time_point now) {
    const int64_t until = ns(now + duration_ + duration_ / 10);
    int64_t cur = granted_until_[node].load();
    while (cur < until && !granted_until_[node].compare_exchange_weak(cur, until)) {
    }
    return !revoked_[node].load();
  }
  // No new grants to `node` until restore(): this node is about to exclude it.
  void revoke(uint16_t node) { revoked_[node].store(true); }
  void restore(uint16_t node) { revoked_[node].store(false); }
  bool revoked(uint16_t node) const { return revoked_[node].load(); }
  Clock::time_point granted_until(uint16_t node) const { return at(granted_until_[node].load()); }

  // --- the holding side (B) ---
  // `from` granted this node a lease until `until` (counted from when the heartbeat left).
  void renew(uint16_t from, Clock::time_point until) {
    held_until_[from].store(ns(until));
    recompute_held();
  }
  // `from` refused (it excluded this node, or revoked): no lease from it until it grants again.
  void lose(uint16_t from) {
    held_until_[from].store(0);
    recompute_held();
  }
  // True when this node held a lease from every other data node at `t` (a time no earlier than the read it covers).
  bool held(Clock::time_point t) const {
    return !enabled_ || ignore_for_reads_ || ns(t) < held_min_.load(std::memory_order_acquire);
  }
  Clock::time_point held_from(uint16_t node) const { return at(held_until_[node].load()); }

 private:
  static int64_t ns(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }
  static Clock::time_point at(int64_t v) { return Clock::time_point(std::chrono::nanoseconds(v)); }
  // Renewals come from one thread (the failure detector's worker); readers load the minimum.
  void recompute_held() {
    int64_t m = INT64_MAX;
    for (uint16_t p : peers_) m = std::min(m, held_until_[p].load());
    held_min_.store(m, std::memory_order_release);
  }

  bool enabled_ = false;
  bool ignore_for_reads_ = false;
  std::chrono::milliseconds duration_{0};
  std::vector<uint16_t> peers_;
  std::vector<std::atomic<int64_t>> granted_until_;
  std::vector<std::atomic<int64_t>> held_until_;
  std::vector<std::atomic<bool>> revoked_;
  std::atomic<int64_t> held_min_{INT64_MAX};
};

}  // namespace rdx::cluster
