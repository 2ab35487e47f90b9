#pragma once
// The transaction context (Dandelion's TxCache): reads executed, writes buffered, expectations kept for commit.
// Internal to the transaction layer; users see txn::Transaction.
#include <time.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "txn/service.h"

namespace rdx::txn {

inline int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

class Tx final : public Transaction {
 public:
  Tx(TxnServiceImpl& s, uint64_t id)
      : svc_(s), id_(id), start_ns_(realtime_ns()), t0_(std::chrono::steady_clock::now()) {}
  ~Tx() override {
    if (!done_) abort();
  }

  rpc::Task<Read> get(std::string key) override {
    if (auto w = writes_.find(key); w != writes_.end()) {  // read your own write
      Read r;
      if (!w->second) {
        r.status = Code::kNotFound;
      } else {
        r.value = *w->second;
      }
      co_return r;
    }
    if (auto it = reads_.find(key); it != reads_.end()) co_return it->second;  // repeatable within the transaction
    Read r = co_await svc_.execute_read(key, false);
    if (r.status == Code::kOk || r.status == Code::kNotFound) {
      reads_.emplace(std::move(key), r);
    } else {
      failed_ = true;
    }
    co_return r;
  }
  void put(std::string key, std::string value) override { writes_[std::move(key)] = std::move(value); }
  void remove(std::string key) override { writes_[std::move(key)] = std::nullopt; }
  void expect(std::string key, uint64_t version) override { expects_[std::move(key)] = version; }
  rpc::Task<Outcome> commit() override {
    Outcome o = co_await svc_.commit(*this);
    done_ = true;
    co_return o;
  }
  void abort() override {
    if (done_) return;
    done_ = true;
    svc_.record(*this, false, {});
  }
  void set_type(std::string type) override { type_ = std::move(type); }
  uint64_t committed_version(const std::string& key) const override {
    auto it = committed_versions_.find(key);
    return it == committed_versions_.end() ? 0 : it->second;
  }

 private:
  friend class TxnServiceImpl;
  TxnServiceImpl& svc_;
  uint64_t id_;
  int64_t start_ns_;
  std::chrono::steady_clock::time_point t0_;
  std::string type_ = "tx";
  bool failed_ = false, done_ = false;
  std::map<std::string, Read> reads_;
  std::map<std::string, std::optional<std::string>> writes_;
  std::map<std::string, uint64_t> expects_;
  std::map<std::string, uint64_t> committed_versions_;
};

}  // namespace rdx::txn
