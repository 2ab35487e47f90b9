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
// passed, then mark B excluded only if no rejoin restored it meanwhile (Membership::try_exclude, under the lock that
// also covers grants, so "excluded" always means "revoked and every grant ended").
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
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
  // leases (no failure detection) make every read covered and granted_until() always past. A node that starts may
  // be a restarted one whose earlier incarnation granted leases it no longer remembers: it honours them as if it had
  // granted one to every node just now. `ignore_for_reads` plants a bug for tests (every read covered).
  void configure(bool enabled, std::chrono::milliseconds duration, std::vector<uint16_t> peers,
                 bool ignore_for_reads = false) {
    enabled_ = enabled;
    ignore_for_reads_ = ignore_for_reads;
    duration_ = duration;
    peers_ = std::move(peers);
    const int64_t start_grant = enabled ? ns(Clock::now() + duration_ + duration_ / 10) : 0;
    for (auto& g : granted_until_) g.store(start_grant);
    recompute_held();
  }
  // A new membership epoch: the other data nodes are now `peers`. A new one holds no lease from here until it
  // heartbeats; its lease from here counts from its first answer. Call on the failure detector's thread (renewals).
  void set_peers(std::vector<uint16_t> peers) {
    peers_ = std::move(peers);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    recompute_held();
  }
  bool enabled() const { return enabled_; }
  std::chrono::milliseconds duration() const { return duration_; }

  // --- the granting side (X); Membership serializes grants with exclusions ---
  // Grants `node` a lease that ends `duration` (+ a tenth for clock drift) from `now`; false, and no grant, when it
  // is revoked.
  bool grant(uint16_t node, Clock::time_point now) {
    if (revoked_[node].load()) return false;
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
  // `from` answered a heartbeat sent at `sent`: a lease until sent + duration. One that does not overlap the previous
  // lease from `from` starts a new generation (the leases lapsed in between).
  void renew(uint16_t from, Clock::time_point sent) {
    if (ns(sent) > held_until_[from].load()) generation_.fetch_add(1, std::memory_order_acq_rel);
    held_until_[from].store(ns(sent + duration_));
    recompute_held();
  }
  // `from` refused (it excluded this node, or revoked): no lease from it until it grants again.
  void lose(uint16_t from) {
    generation_.fetch_add(1, std::memory_order_acq_rel);
    held_until_[from].store(0);
    recompute_held();
  }
  // A read of this node's own copy is covered when the leases from every other data node were held from before it
  // began until after it ended: take a ticket before the read, then ask covers(ticket, a time after the read).
  uint64_t ticket() const { return generation_.load(std::memory_order_acquire); }
  bool covers(uint64_t ticket, Clock::time_point after_read) const {
    if (!enabled_ || ignore_for_reads_) return true;
    const int64_t until = held_min_.load(std::memory_order_acquire);
    return ns(after_read) < until && generation_.load(std::memory_order_acquire) == ticket;
  }
  // Whether every lease is held at `t` (metrics).
  bool held(Clock::time_point t) const { return covers(ticket(), t); }
  // Whether this node holds leases from a majority of the data nodes (itself counted) at `t`: the authority a
  // primary needs to answer reads and commit writes. Nodes that exclude a primary to elect another (a majority)
  // each wait out the lease they granted it first, so a deposed primary has lost this before its successor serves.
  bool authority(Clock::time_point t) const {
    return !enabled_ || ignore_for_reads_ || ns(t) < authority_until_.load(std::memory_order_acquire);
  }

 private:
  static int64_t ns(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }
  static Clock::time_point at(int64_t v) { return Clock::time_point(std::chrono::nanoseconds(v)); }
  // Renewals come from one thread (the failure detector's worker); readers load the minimum after the generation
  // was bumped, so a reader that sees a new minimum also sees the generation that came with it.
  void recompute_held() {
    int64_t m = INT64_MAX;
    std::vector<int64_t> until;
    for (uint16_t p : peers_) {
      until.push_back(held_until_[p].load());
      m = std::min(m, until.back());
    }
    // Leases from a majority of the data nodes: this node counts for one, so it needs (n / 2) of its n - 1 peers.
    const size_t needed = (peers_.size() + 1) / 2;
    int64_t authority = INT64_MAX;
    if (needed > 0) {
      std::nth_element(until.begin(), until.begin() + static_cast<std::ptrdiff_t>(needed - 1), until.end(),
                       std::greater<>());
      authority = until[needed - 1];
    }
    authority_until_.store(authority, std::memory_order_release);
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
  std::atomic<int64_t> authority_until_{INT64_MAX};
  std::atomic<uint64_t> generation_{0};
};

}  // namespace rdx::cluster
