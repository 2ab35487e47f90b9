#include "workload/kv.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "workload/exec.h"

namespace rdx::workload {

void KeySpaceWorkload::read_key_space(ParamReader& p, const char* count_name, uint64_t default_keys,
                                      uint64_t default_value_size, const char* default_dist) {
  keys_ = p.u64(count_name, default_keys, 1, uint64_t{1} << 40, "number of keys");
  value_size_ = p.u64("value_size", default_value_size, 1, 1 << 20, "value size in bytes");
  std::string dist = p.choice("dist", default_dist, {"uniform", "zipfian"}, "key distribution");
  double theta = p.real("theta", 0.99, 0.01, 0.999, "Zipfian skew (dist=zipfian)");
  chooser_ = dist == "zipfian" ? KeyChooser::zipfian(keys_, theta) : KeyChooser::uniform(keys_);
}

std::string KeySpaceWorkload::key(uint64_t index) const { return fmt::format("{}{}", prefix_, index); }

bool KeySpaceWorkload::valid_value(std::string_view v) const {
  return v.size() == value_size_ && std::all_of(v.begin(), v.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

void KeySpaceWorkload::load(uint64_t begin, uint64_t end, const LoadSink& sink) const {
  std::string value;
  for (uint64_t i = begin; i < end && i < keys_; ++i) {
    Rng r = unit_rng(seed_, i);
    random_value(r, value_size_, value);
    sink(key(i), value);
  }
}

void KeySpaceWorkload::pick_distinct(Rng& rng, size_t n, std::vector<uint64_t>& out) const {
  const size_t first = out.size();
  while (out.size() < first + n) {
    uint64_t k = chooser_.next(rng);
    if (std::find(out.begin() + static_cast<ptrdiff_t>(first), out.end(), k) == out.end()) out.push_back(k);
  }
}

rpc::Task<TxOutcome> KeySpaceWorkload::run_one(txn::TxnService& svc, Rng& rng, Ledger&) const {
  const KvPlan p = plan(rng);
  TxOutcome out;
  out.type = p.type;
  auto tx = svc.begin();
  tx->set_type(txn_types()[p.type]);
  std::vector<std::string> read_keys;
  read_keys.reserve(p.reads.size());
  for (uint64_t k : p.reads) read_keys.push_back(key(k));
  std::vector<txn::Read> reads = co_await read_all(*tx, read_keys, parallel_gets_);
  for (size_t i = 0; i < reads.size(); ++i) {
    const txn::Read& r = reads[i];
    if (read_failed(r)) {
      out.status = failed_read_status(r);
    } else if (r.status == Code::kNotFound) {
      out.status = TxStatus::kDataError;
      out.error = fmt::format("key {} is missing", read_keys[i]);
    } else if (!valid_value(r.value)) {
      out.status = TxStatus::kDataError;
      out.error = fmt::format("key {} holds a corrupt value {}", read_keys[i], describe_value(r.value));
    } else {
      continue;
    }
    out.status = co_await give_up(*tx, out.status, out.error);
    co_return out;
  }
  if (compute_us_ > 0) {  // (the worker computes: nothing else runs on it meanwhile, as in RCC)
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(compute_us_);
    while (std::chrono::steady_clock::now() < until) {
    }
  }
  std::string value;
  for (uint64_t k : p.writes) {
    random_value(rng, value_size_, value);
    tx->put(key(k), value);
  }
  out.status = co_await commit(*tx);
  co_return out;
}

Ogp::Ogp(ParamReader& p) : KeySpaceWorkload("ogp", {"O(G,P)"}, "og:") {
  read_common(p, {});
  read_key_space(p, "keys", 1'000'000, 16, "uniform");
  gets_ = p.u64("g", 4, 0, 64, "gets per transaction");
  puts_ = p.u64("p", 2, 0, 64, "puts per transaction");
  rmw_ = p.flag("rmw", true, "puts overwrite the keys read (1) or other keys (0)");
  if (gets_ + puts_ == 0) p.fail("g and p cannot both be 0");
  uint64_t distinct = rmw_ ? std::max(gets_, puts_) : gets_ + puts_;
  if (distinct > keys_) p.fail(fmt::format("a transaction needs {} distinct keys but keys={}", distinct, keys_));
  rename_type(0, fmt::format("O({},{})", gets_, puts_));
  keep_params(p);
}

KvPlan Ogp::plan(Rng& rng) const {
  KvPlan plan;
  std::vector<uint64_t> keys;
  pick_distinct(rng, rmw_ ? std::max(gets_, puts_) : gets_ + puts_, keys);
  plan.reads.assign(keys.begin(), keys.begin() + static_cast<ptrdiff_t>(gets_));
  if (rmw_) {
    plan.writes.assign(keys.begin(), keys.begin() + static_cast<ptrdiff_t>(puts_));
  } else {
    plan.writes.assign(keys.begin() + static_cast<ptrdiff_t>(gets_), keys.end());
  }
  return plan;
}

Ycsb::Ycsb(char letter, ParamReader& p)
    : KeySpaceWorkload(letter == 'r' ? "ycsb-rcc" : fmt::format("ycsb-{}", letter),
                       letter == 'c'                    ? std::vector<std::string>{"Read"}
                       : letter == 'f' || letter == 'r' ? std::vector<std::string>{"Read", "ReadModifyWrite"}
                                                        : std::vector<std::string>{"Read", "Update"},
                       "yc:") {
  const bool rcc = letter == 'r';
  read_common(p, {});
  read_key_space(p, "records", 100000, 100, rcc ? "uniform" : "zipfian");
  ops_ = p.u64("ops", rcc ? 10 : 4, 1, 64, "operations (distinct keys) per transaction");
  compute_us_ = p.u64("compute_us", rcc ? 5 : 0, 0, 1'000'000, "computation per transaction, in microseconds");
  read_fraction_ = letter == 'a' ? 0.5 : letter == 'b' ? 0.95 : letter == 'c' ? 1.0 : 0.5;
  if (rcc) read_fraction_ = 1 - static_cast<double>(p.u64("write_percent", 10, 0, 100, "operations that write")) / 100;
  rmw_ = letter == 'f' || rcc;
  if (ops_ > keys_) p.fail(fmt::format("ops={} exceeds records={}", ops_, keys_));
  keep_params(p);
}

KvPlan Ycsb::plan(Rng& rng) const {
  KvPlan plan;
  std::vector<uint64_t> keys;
  pick_distinct(rng, ops_, keys);
  for (uint64_t k : keys) {
    if (rng.chance(read_fraction_)) {
      plan.reads.push_back(k);
    } else {
      if (rmw_) plan.reads.push_back(k);
      plan.writes.push_back(k);
    }
  }
  plan.type = plan.writes.empty() ? 0 : 1;
  return plan;
}

}  // namespace rdx::workload
