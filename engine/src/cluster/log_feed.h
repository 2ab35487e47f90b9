#pragma once
// The log feed of a node: every write this node applies as a key's primary, in one node-wide LSN order (per key it
// is the version order: writes of one key are serialized by its lock). The replication protocol publishes into it
// (ReplicaLog::apply_at_primary and its own single-key writes); read replicas subscribe to it to receive the RW
// nodes' log. Subscribers are called on the publishing worker's thread, so they must be thread-safe and quick.
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rdx::cluster {

struct LogRecord {
  uint64_t lsn = 0;  // node-wide, strictly increasing from 1
  std::string_view key;
  const std::string* value = nullptr;  // null: the write deleted the key
  uint64_t version = 0;
};

class LogFeed {
 public:
  using Subscriber = std::function<void(const LogRecord&)>;

  // Returns a handle for unsubscribe().
  uint64_t subscribe(Subscriber s) {
    std::lock_guard<std::mutex> lk(mu_);
    subscribers_.push_back({++next_id_, std::move(s)});
    active_.store(true, std::memory_order_release);
    return next_id_;
  }
  void unsubscribe(uint64_t id) {
    std::lock_guard<std::mutex> lk(mu_);
    std::erase_if(subscribers_, [id](const auto& s) { return s.id == id; });
    active_.store(!subscribers_.empty(), std::memory_order_release);
  }

  void publish(std::string_view key, const std::optional<std::string>& value, uint64_t version) {
    if (!active_.load(std::memory_order_acquire)) {
      lsn_.fetch_add(1, std::memory_order_acq_rel);
      return;
    }
    std::lock_guard<std::mutex> lk(mu_);  // subscribers see LSNs in increasing order
    LogRecord r{lsn_.fetch_add(1, std::memory_order_acq_rel) + 1, key, value ? &*value : nullptr, version};
    for (const auto& s : subscribers_) s.fn(r);
  }
  uint64_t last_lsn() const { return lsn_.load(std::memory_order_acquire); }

 private:
  struct Sub {
    uint64_t id;
    Subscriber fn;
  };
  std::atomic<uint64_t> lsn_{0};
  std::atomic<bool> active_{false};
  std::mutex mu_;
  std::vector<Sub> subscribers_;
  uint64_t next_id_ = 0;
};

}  // namespace rdx::cluster
