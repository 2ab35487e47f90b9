#pragma once
// What every workload shares: name, effective parameters, type names, the mix, and the common parameters.
#include <string>
#include <utility>
#include <vector>

#include "workload/params.h"
#include "workload/workload.h"

namespace rdx::workload {

class WorkloadBase : public Workload {
 public:
  const std::string& name() const override { return name_; }
  const std::vector<std::pair<std::string, std::string>>& params() const override { return params_; }
  const std::vector<std::string>& txn_types() const override { return types_; }

  // Draws a transaction type from the mix (weights per type).
  uint16_t pick_type(Rng& rng) const;
  const std::vector<uint64_t>& mix() const { return mix_; }

  // Workloads without invariants report "not checked".
  rpc::Task<InvariantReport> check(txn::TxnService& svc, const Ledger& merged) const override;

 protected:
  WorkloadBase(std::string name, std::vector<std::string> types) : name_(std::move(name)), types_(std::move(types)) {}
  // Reads the parameters every workload has (seed, parallel_gets) and, when default_mix is not empty, the mix (one
  // weight per type); call first in the constructor.
  void read_common(ParamReader& p, const std::vector<uint64_t>& default_mix);
  // For type names that depend on parameters ("O(4,2)").
  void rename_type(size_t i, std::string n) { types_[i] = std::move(n); }
  // Call last in the constructor: keeps the effective parameters for params().
  void keep_params(const ParamReader& p) { params_ = p.effective(); }

  uint64_t seed_ = 1;
  bool parallel_gets_ = true;

 private:
  std::string name_;
  std::vector<std::string> types_;
  std::vector<std::pair<std::string, std::string>> params_;
  std::vector<uint64_t> mix_;
  std::vector<uint64_t> cumulative_;
};

}  // namespace rdx::workload
