#pragma once
// A table copied to a joining member page by page, pages bounded by message size (values go up to 1 MiB, so a fixed
// number of records per page could outgrow a message): the records of a store scan page that do not fit one answer
// start the next. One pager per (joiner, copy session); sessions a joiner abandoned expire.
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "store/hashtable.h"

namespace rdx::replication {

inline constexpr size_t kCopyPageBytes = 48 * 1024;  // fits one RPC message with room to spare

class TablePager {
 public:
  // The next record (valid until pop()), or null when the table is done.
  store::ScanItem* next(store::HashTable& table, store::Session& s) {
    if (pending_.empty() && !store_done_) {
      std::vector<store::ScanItem> page;
      cursor_ = table.scan(s, cursor_, 64, &page);
      store_done_ = cursor_ == 0;
      for (auto& it : page) pending_.push_back(std::move(it));
    }
    return pending_.empty() ? nullptr : &pending_.front();
  }
  void pop() { pending_.pop_front(); }
  bool done() const { return pending_.empty() && store_done_; }
  // Whether a record of `bytes` still fits an answer holding `used` bytes and `count` records (the first always does).
  static bool fits(size_t used, size_t count, size_t bytes) { return count == 0 || used + bytes <= kCopyPageBytes; }

 private:
  uint64_t cursor_ = 0;
  bool store_done_ = false;
  std::deque<store::ScanItem> pending_;
};

// The copy sessions a node serves, by (joiner, session id), each with the protocol's own state beside its pager.
template <typename Session>
class CopySessions {
 public:
  using Clock = std::chrono::steady_clock;
  Session& at(uint16_t joiner, uint64_t id) {
    Entry& e = sessions_[{joiner, id}];
    e.last_used = Clock::now();
    return e.session;
  }
  void erase(uint16_t joiner, uint64_t id) { sessions_.erase({joiner, id}); }
  void expire(Clock::duration idle) {
    const auto now = Clock::now();
    for (auto it = sessions_.begin(); it != sessions_.end();)
      it = now - it->second.last_used > idle ? sessions_.erase(it) : std::next(it);
  }

 private:
  struct Entry {
    Session session;
    Clock::time_point last_used;
  };
  std::map<std::pair<uint16_t, uint64_t>, Entry> sessions_;
};

}  // namespace rdx::replication
