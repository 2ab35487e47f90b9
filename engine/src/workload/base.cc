#include "workload/base.h"

#include <algorithm>

namespace rdx::workload {

void WorkloadBase::read_common(ParamReader& p, const std::vector<uint64_t>& default_mix) {
  seed_ = p.u64("seed", 1, 0, UINT64_MAX, "seed of the initial data (transactions use the caller's Rng)");
  parallel_gets_ =
      p.flag("parallel_gets", true, "issue a transaction's independent gets together (1) or one after the other (0)");
  if (!default_mix.empty()) {
    mix_ = p.weights("mix", default_mix, "relative weights of the transaction types, in txn_types() order");
  } else {
    mix_.assign(types_.size(), 1);
  }
  uint64_t sum = 0;
  cumulative_.clear();
  for (uint64_t w : mix_) cumulative_.push_back(sum += w);
}

uint16_t WorkloadBase::pick_type(Rng& rng) const {
  uint64_t x = rng.below(cumulative_.back());
  auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), x);
  return static_cast<uint16_t>(it - cumulative_.begin());
}

rpc::Task<InvariantReport> WorkloadBase::check(txn::TxnService&, const Ledger&) const {
  InvariantReport r;
  r.summary = name_ + " has no invariant to check";
  co_return r;
}

}  // namespace rdx::workload
