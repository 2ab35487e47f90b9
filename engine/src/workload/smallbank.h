#pragma once
// SmallBank (H-Store, OLTPBench; the write-intensive workload of FaSST and Dandelion).
//
// Data: per account a checking and a savings balance, in cents.
//   keys    sb:c:<account>  sb:s:<account>        (account in [0, accounts), decimal)
//   values  decimal int64 text ("12345", "-500"): Redis-compatible (INCRBY works on them). A value that is not a
//           canonical decimal within +-kMaxBalance is reported as corrupt (TxStatus::kDataError), never trusted.
//   initial 10000..50000 cents per balance, a deterministic function of (seed, account).
// Transactions (default mix 15/15/15/25/15/15, OLTPBench's):
//   Amalgamate(a, b)          a's savings + checking move to b's checking; a's balances become 0
//   Balance(a)                reads a's savings and checking (read-only)
//   DepositChecking(a, V)     checking(a) += V                                       money created: +V
//   SendPayment(a, b, V)      checking(a) -= V, checking(b) += V; rolls back if checking(a) < V
//   TransactSavings(a, V)     savings(a) += V; rolls back if the result would be negative      money: +V
//   WriteCheck(a, V)          checking(a) -= V, or V + 1 (overdraft penalty) if savings + checking < V
//                                                                                    money destroyed: V or V + 1
// Accounts: uniform, or hot_percent% of them (the first ones) chosen with probability hot_prob. Two-account
// transactions use two different accounts.
// Invariant: sum of all balances == initial sum + sum of the committed transactions' money deltas (Ledger).
#include <optional>
#include <string>
#include <vector>

#include "workload/base.h"
#include "workload/distributions.h"

namespace rdx::workload {

inline constexpr int64_t kMaxBalance = 1'000'000'000'000'000;  // cents; beyond this a stored value is corrupt

std::string encode_balance(int64_t cents);
std::optional<int64_t> decode_balance(std::string_view text);

enum class SbType : uint16_t { kAmalgamate, kBalance, kDepositChecking, kSendPayment, kTransactSavings, kWriteCheck };

struct SbPlan {
  SbType type = SbType::kBalance;
  uint64_t a = 0, b = 0;  // accounts (b only for Amalgamate and SendPayment)
  int64_t amount = 0;
};

// The effect of a plan on the balances it read (in read_keys() order).
struct SbEffect {
  bool rollback = false;
  std::vector<std::pair<size_t, int64_t>> writes;  // (index into the read keys, new balance)
  int64_t delta = 0;                               // money created (+) or destroyed (-)
};

class SmallBank final : public WorkloadBase {
 public:
  explicit SmallBank(ParamReader& p);

  uint64_t load_units() const override { return accounts_; }
  void load(uint64_t begin, uint64_t end, const LoadSink& sink) const override;
  rpc::Task<TxOutcome> run_one(txn::TxnService& svc, Rng& rng, Ledger& ledger) const override;
  rpc::Task<InvariantReport> check(txn::TxnService& svc, const Ledger& merged) const override;

  // The pieces of run_one, exposed for tests.
  SbPlan plan(Rng& rng) const;
  static std::vector<std::string> read_keys(const SbPlan& p);
  static SbEffect apply(const SbPlan& p, const std::vector<int64_t>& balances);
  int64_t initial_balance(uint64_t account, bool savings) const;
  int64_t initial_total() const;

  static std::string checking_key(uint64_t account);
  static std::string savings_key(uint64_t account);

 private:
  uint64_t accounts_;
  KeyChooser chooser_;
  int64_t deposit_, transact_, payment_, check_;
};

}  // namespace rdx::workload
