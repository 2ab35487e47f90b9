#pragma once
// What a member heard, as a backup, of transactions across shards: the ids of those whose kApply writes were
// replicated here, and of those whose writes were then shown (their coordinator's readable notice: it committed them),
// for a minute. When this node becomes its shard's primary, this is how it answers for its predecessor about a
// transaction it did not inherit (cluster::TxnHeard): shown (committed there), replicated and decided since (the
// outcome is not known here), or nothing, which is a fact only for transactions younger than the time since this node
// hears every replicated write of its shard (its last copy of the shard) and since it forgot what it heard.
// Shared by the node's workers, like UndecidedWrites.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "cluster/replica_log.h"

namespace rdx::replication::primary_backup {

class HeardTransactions {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kKeep{60};
  static constexpr size_t kMaxKept = size_t{1} << 18;  // (a newer horizon when more arrive within kKeep)

  void replicated(uint64_t txid, Clock::time_point now) { note(txid, false, now); }
  void shown(uint64_t txid, Clock::time_point now) { note(txid, true, now); }

  // The node copies its shard (again): until it is in sync it may miss writes. Then it hears every one from `t`.
  void incomplete() {
    std::lock_guard<std::mutex> lk(mu_);
    complete_since_.reset();
  }
  void complete_from(Clock::time_point t) {
    std::lock_guard<std::mutex> lk(mu_);
    complete_since_ = t;
  }

  cluster::TxnHeard heard(uint64_t txid, Clock::time_point now) {
    std::lock_guard<std::mutex> lk(mu_);
    expire(now);
    using Kind = cluster::TxnHeard::Kind;
    if (auto it = by_txid_.find(txid); it != by_txid_.end())
      return {it->second.shown ? Kind::kShown : Kind::kReplicated, {}};
    if (!complete_since_) return {};
    const Clock::time_point since = std::max(*complete_since_, forgotten_until_);
    return {Kind::kNothing, std::chrono::duration_cast<std::chrono::milliseconds>(now - since)};
  }

 private:
  struct Entry {
    Clock::time_point at;
    bool shown = false;
  };

  void note(uint64_t txid, bool shown, Clock::time_point now) {
    std::lock_guard<std::mutex> lk(mu_);
    Entry& e = by_txid_[txid];
    e.at = now;
    e.shown |= shown;
    order_.push_back({now, txid});
    expire(now);
  }
  // Forgets what is older than kKeep (or beyond kMaxKept): "nothing heard" then holds only after the forgotten ones.
  void expire(Clock::time_point now) {
    while (!order_.empty() && (now - order_.front().first > kKeep || order_.size() > kMaxKept)) {
      const auto [at, txid] = order_.front();
      order_.pop_front();
      if (auto it = by_txid_.find(txid); it != by_txid_.end() && it->second.at == at) by_txid_.erase(it);
      forgotten_until_ = std::max(forgotten_until_, at);
    }
  }

  std::mutex mu_;
  std::unordered_map<uint64_t, Entry> by_txid_;
  std::deque<std::pair<Clock::time_point, uint64_t>> order_;  // (noted at, txid), oldest first
  std::optional<Clock::time_point> complete_since_;
  Clock::time_point forgotten_until_{};
};

}  // namespace rdx::replication::primary_backup
