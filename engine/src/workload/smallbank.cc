#include "workload/smallbank.h"

#include <fmt/format.h>

#include <charconv>

#include "workload/bulk.h"
#include "workload/exec.h"

namespace rdx::workload {

std::string encode_balance(int64_t cents) { return std::to_string(cents); }

std::optional<int64_t> decode_balance(std::string_view text) {
  // Canonical decimal only: what encode_balance writes (no '+', spaces or leading zeros).
  if (text.empty() || text.size() > 20) return std::nullopt;
  size_t digits = text[0] == '-' ? 1 : 0;
  if (digits == text.size() || (text[digits] == '0' && text.size() > digits + 1) || text == "-0") return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (v > kMaxBalance || v < -kMaxBalance) return std::nullopt;
  return v;
}

std::string SmallBank::checking_key(uint64_t account) { return fmt::format("sb:c:{}", account); }
std::string SmallBank::savings_key(uint64_t account) { return fmt::format("sb:s:{}", account); }

SmallBank::SmallBank(ParamReader& p)
    : WorkloadBase("smallbank",
                   {"Amalgamate", "Balance", "DepositChecking", "SendPayment", "TransactSavings", "WriteCheck"}) {
  read_common(p, {15, 15, 15, 25, 15, 15});
  accounts_ = p.u64("accounts", 100000, 2, uint64_t{1} << 40, "number of accounts (2 keys each)");
  double hot_percent = p.real("hot_percent", 0, 0, 100, "percentage of accounts in the hot set (0: uniform)");
  double hot_prob = p.real("hot_prob", 0.9, 0, 1, "probability that an account is drawn from the hot set");
  constexpr int64_t kMaxAmount = 1'000'000'000;
  deposit_ = static_cast<int64_t>(p.u64("deposit", 130, 0, kMaxAmount, "DepositChecking amount (cents)"));
  transact_ = static_cast<int64_t>(p.u64("transact", 2020, 0, kMaxAmount, "TransactSavings amount (cents)"));
  payment_ = static_cast<int64_t>(p.u64("payment", 500, 0, kMaxAmount, "SendPayment amount (cents)"));
  check_ = static_cast<int64_t>(p.u64("check", 500, 0, kMaxAmount, "WriteCheck amount (cents)"));
  auto hot = static_cast<uint64_t>(static_cast<double>(accounts_) * hot_percent / 100.0);
  if (hot_percent > 0 && (hot < 2 || hot >= accounts_)) {
    p.fail(fmt::format("hot_percent={} gives {} hot accounts of {} (need at least 2 and fewer than all)", hot_percent,
                       hot, accounts_));
  }
  chooser_ = hot_percent > 0 ? KeyChooser::hotspot(accounts_, hot, hot_prob) : KeyChooser::uniform(accounts_);
  keep_params(p);
}

int64_t SmallBank::initial_balance(uint64_t account, bool savings) const {
  Rng r = unit_rng(seed_, account * 2 + (savings ? 1 : 0));
  return static_cast<int64_t>(r.between(10000, 50000));
}

int64_t SmallBank::initial_total() const {
  int64_t sum = 0;
  for (uint64_t a = 0; a < accounts_; ++a) sum += initial_balance(a, false) + initial_balance(a, true);
  return sum;
}

void SmallBank::load(uint64_t begin, uint64_t end, const LoadSink& sink) const {
  for (uint64_t a = begin; a < end && a < accounts_; ++a) {
    sink(checking_key(a), encode_balance(initial_balance(a, false)));
    sink(savings_key(a), encode_balance(initial_balance(a, true)));
  }
}

SbPlan SmallBank::plan(Rng& rng) const {
  SbPlan p;
  p.type = static_cast<SbType>(pick_type(rng));
  p.a = chooser_.next(rng);
  switch (p.type) {
    case SbType::kAmalgamate:
    case SbType::kSendPayment:
      do {
        p.b = chooser_.next(rng);
      } while (p.b == p.a);
      p.amount = p.type == SbType::kSendPayment ? payment_ : 0;
      break;
    case SbType::kDepositChecking:
      p.amount = deposit_;
      break;
    case SbType::kTransactSavings:
      p.amount = transact_;
      break;
    case SbType::kWriteCheck:
      p.amount = check_;
      break;
    case SbType::kBalance:
      break;
  }
  return p;
}

std::vector<std::string> SmallBank::read_keys(const SbPlan& p) {
  switch (p.type) {
    case SbType::kAmalgamate:
      return {savings_key(p.a), checking_key(p.a), checking_key(p.b)};
    case SbType::kBalance:
    case SbType::kWriteCheck:
      return {savings_key(p.a), checking_key(p.a)};
    case SbType::kDepositChecking:
      return {checking_key(p.a)};
    case SbType::kSendPayment:
      return {checking_key(p.a), checking_key(p.b)};
    case SbType::kTransactSavings:
      return {savings_key(p.a)};
  }
  return {};
}

SbEffect SmallBank::apply(const SbPlan& p, const std::vector<int64_t>& bal) {
  // Inputs are within +-kMaxBalance and amounts within 1e9, so no sum below can overflow int64.
  SbEffect e;
  switch (p.type) {
    case SbType::kAmalgamate:  // savings(a), checking(a), checking(b)
      e.writes = {{0, 0}, {1, 0}, {2, bal[2] + bal[0] + bal[1]}};
      break;
    case SbType::kBalance:
      break;
    case SbType::kDepositChecking:
      e.writes = {{0, bal[0] + p.amount}};
      e.delta = p.amount;
      break;
    case SbType::kSendPayment:  // checking(a), checking(b)
      if (bal[0] < p.amount) {
        e.rollback = true;
        break;
      }
      e.writes = {{0, bal[0] - p.amount}, {1, bal[1] + p.amount}};
      break;
    case SbType::kTransactSavings:
      if (bal[0] + p.amount < 0) {
        e.rollback = true;
        break;
      }
      e.writes = {{0, bal[0] + p.amount}};
      e.delta = p.amount;
      break;
    case SbType::kWriteCheck: {  // savings(a), checking(a)
      int64_t charge = bal[0] + bal[1] < p.amount ? p.amount + 1 : p.amount;
      e.writes = {{1, bal[1] - charge}};
      e.delta = -charge;
      break;
    }
  }
  for (const auto& [i, v] : e.writes) {
    if (v > kMaxBalance || v < -kMaxBalance) e.rollback = true;  // would store a value decode_balance rejects
  }
  if (e.rollback) {
    e.writes.clear();
    e.delta = 0;
  }
  return e;
}

rpc::Task<TxOutcome> SmallBank::run_one(txn::TxnService& svc, Rng& rng, Ledger& ledger) const {
  const SbPlan p = plan(rng);
  TxOutcome out;
  out.type = static_cast<uint16_t>(p.type);
  auto tx = svc.begin();
  tx->set_type(txn_types()[out.type]);
  const std::vector<std::string> keys = read_keys(p);
  std::vector<txn::Read> reads = co_await read_all(*tx, keys, parallel_gets_);
  std::vector<int64_t> balances(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const txn::Read& r = reads[i];
    if (read_failed(r)) {
      out.status = failed_read_status(r);
    } else if (r.status == Code::kNotFound) {
      out.status = TxStatus::kDataError;
      out.error = fmt::format("account key {} is missing", keys[i]);
    } else if (auto v = decode_balance(r.value)) {
      balances[i] = *v;
      continue;
    } else {
      out.status = TxStatus::kDataError;
      out.error = fmt::format("key {} holds a corrupt balance {}", keys[i], describe_value(r.value));
    }
    out.status = co_await give_up(*tx, out.status, out.error);
    co_return out;
  }
  const SbEffect e = apply(p, balances);
  if (e.rollback) {
    tx->abort();
    out.status = TxStatus::kRolledBack;
    co_return out;
  }
  for (const auto& [i, v] : e.writes) tx->put(keys[i], encode_balance(v));
  out.status = co_await commit(*tx);
  if (out.status == TxStatus::kCommitted) ledger.balance_delta += e.delta;
  if (out.status == TxStatus::kUnavailable && tx->outcome_unknown()) ledger.add_unknown(e.delta);
  co_return out;
}

rpc::Task<InvariantReport> SmallBank::check(txn::TxnService& svc, const Ledger& merged) const {
  InvariantReport report;
  if (!merged.starts_at_load) {
    report.summary =
        "not checked: the run did not start on freshly loaded data (--load, or --ledger-base after a load)";
    co_return report;
  }
  report.checked = true;
  int64_t total = 0;
  uint64_t bad = 0;
  const UnitKeys keys_of = [](uint64_t a, std::vector<std::string>& keys) {
    keys.push_back(checking_key(a));
    keys.push_back(savings_key(a));
  };
  const UnitVisit visit = [&](uint64_t, const std::vector<std::string>& keys, const std::vector<txn::Read>& reads) {
    for (size_t i = 0; i < keys.size(); ++i) {
      std::optional<int64_t> v;
      if (reads[i].status == Code::kOk) v = decode_balance(reads[i].value);
      if (v) {
        total += *v;
        continue;
      }
      if (++bad <= 10) {
        report.problems.push_back(reads[i].status == Code::kOk
                                      ? fmt::format("{}: corrupt balance {}", keys[i], describe_value(reads[i].value))
                                      : fmt::format("{}: missing", keys[i]));
      }
    }
  };
  Status s = co_await scan_units(svc, accounts_, keys_of, visit);
  if (!s.is_ok()) {
    report.ok = false;
    report.summary = "could not read the accounts: " + s.to_string();
    co_return report;
  }
  const int64_t initial = initial_total();
  const int64_t expected = initial + merged.balance_delta;
  const bool explained = merged.explains(total - initial);
  report.ok = bad == 0 && explained;
  report.summary = fmt::format("total balance {} {} initial {} + committed delta {} = {}{} ({} accounts{})", total,
                               total == expected ? "=="
                               : explained       ? "~="
                                                 : "!=",
                               initial, merged.balance_delta, expected,
                               merged.unknown_down != 0 || merged.unknown_up != 0
                                   ? fmt::format(", plus between {} and +{} moved by transactions of unknown outcome",
                                                 merged.unknown_down, merged.unknown_up)
                                   : "",
                               accounts_, bad > 0 ? fmt::format(", {} bad balances", bad) : "");
  co_return report;
}

}  // namespace rdx::workload
