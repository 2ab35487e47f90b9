#pragma once
// The log feed of a node: every write this node applies as a key's primary, in one node-wide LSN order (per key it
// is the version order: writes of one key are serialized by its lock). The replication protocol publishes into it
// (ReplicaLog::apply_at_primary and its own single-key writes); read replicas subscribe to it to receive the RW
// nodes' log. Subscribers are called on the publishing worker's thread, under the feed's lock: they must be quick
// and must not call back into the feed (its mutex is not recursive).
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

  // A subscription receives every record after `from` (the last LSN published before it began), each once, in LSN
  // order, with no gap.
  struct Subscription {
    uint64_t id;  // for unsubscribe()
    uint64_t from;
  };
  Subscription subscribe(Subscriber s) {
    std::lock_guard<std::mutex> lk(mu_);
    subscribers_.push_back({++next_id_, std::move(s)});
    return {next_id_, lsn_};
  }
  void unsubscribe(uint64_t id) {
    std::lock_guard<std::mutex> lk(mu_);
    std::erase_if(subscribers_, [id](const auto& s) { return s.id == id; });
  }

  // Numbering and delivery under one lock: a publisher that numbered its record outside it could deliver after a
  // later one, or miss a subscriber that joined in between (a gap a read replica would never notice).
  void publish(std::string_view key, const std::optional<std::string>& value, uint64_t version) {
    std::lock_guard<std::mutex> lk(mu_);
    LogRecord r{++lsn_, key, value ? &*value : nullptr, version};
    for (const auto& s : subscribers_) s.fn(r);
  }
  uint64_t last_lsn() const {
    std::lock_guard<std::mutex> lk(mu_);
    return lsn_;
  }

 private:
  struct Sub {
    uint64_t id;
    Subscriber fn;
  };
  mutable std::mutex mu_;
  uint64_t lsn_ = 0;
  std::vector<Sub> subscribers_;
  uint64_t next_id_ = 0;
};

}  // namespace rdx::cluster
