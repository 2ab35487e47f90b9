#include "workload/tpcc.h"

#include <fmt/format.h>

#include <algorithm>

#include "workload/exec.h"
#include "workload/smallbank.h"

namespace rdx::workload {

std::string TpccLite::warehouse_key(uint64_t w) { return fmt::format("tc:{{w{}}}:w", w); }
std::string TpccLite::district_key(uint64_t w, uint64_t d) { return fmt::format("tc:{{w{}}}:d:{}", w, d); }
std::string TpccLite::customer_key(uint64_t w, uint64_t d, uint64_t c) {
  return fmt::format("tc:{{w{}}}:c:{}:{}", w, d, c);
}
std::string TpccLite::stock_key(uint64_t w, uint64_t i) { return fmt::format("tc:{{w{}}}:s:{}", w, i); }
std::string TpccLite::order_key(uint64_t w, uint64_t d, uint64_t o) {
  return fmt::format("tc:{{w{}}}:o:{}:{}", w, d, o);
}
std::string TpccLite::item_key(uint64_t i) { return fmt::format("tc:i:{}", i); }

namespace {
// Splits on single spaces (no leading, trailing or doubled ones).
std::optional<std::vector<std::string_view>> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    const size_t end = text.find(sep, start);
    const std::string_view part = text.substr(start, end == std::string_view::npos ? end : end - start);
    if (part.empty()) return std::nullopt;
    parts.push_back(part);
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}
}  // namespace

std::optional<std::vector<int64_t>> TpccLite::decode_row(std::string_view text, size_t count) {
  auto parts = split(text, ' ');
  if (!parts || parts->size() != count) return std::nullopt;
  std::vector<int64_t> out;
  for (std::string_view p : *parts) {
    auto v = decode_balance(p);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

std::string TpccLite::encode_row(const std::vector<int64_t>& fields) {
  return fmt::format("{}", fmt::join(fields, " "));
}

std::string TpccLite::encode_order(const Order& o) {
  std::string s = fmt::format("{} {}", o.customer, o.lines.size());
  for (const OrderLine& l : o.lines) s += fmt::format(" {}:{}:{}:{}", l.item, l.supply, l.quantity, l.amount);
  return s;
}

std::optional<TpccLite::Order> TpccLite::decode_order(std::string_view text) {
  auto parts = split(text, ' ');
  if (!parts || parts->size() < 2) return std::nullopt;
  Order o;
  auto customer = decode_balance((*parts)[0]), count = decode_balance((*parts)[1]);
  if (!customer || !count || *count < 0 || static_cast<size_t>(*count) != parts->size() - 2) return std::nullopt;
  o.customer = *customer;
  for (size_t i = 2; i < parts->size(); ++i) {
    auto f = split((*parts)[i], ':');
    if (!f || f->size() != 4) return std::nullopt;
    int64_t v[4];
    for (size_t k = 0; k < 4; ++k) {
      auto x = decode_balance((*f)[k]);
      if (!x) return std::nullopt;
      v[k] = *x;
    }
    o.lines.push_back({v[0], v[1], v[2], v[3]});
  }
  return o;
}

TpccLite::TpccLite(ParamReader& p) : WorkloadBase("tpcc-lite", {"NewOrder", "Payment"}) {
  read_common(p, {50, 50});
  warehouses_ = p.u64("warehouses", 4, 1, 10000, "warehouses (each on one shard, by its hash tag)");
  districts_ = p.u64("districts", 10, 1, 100, "districts per warehouse");
  customers_ = p.u64("customers", 100, 1, 3000, "customers per district (TPC-C: 3000)");
  items_ = p.u64("items", 1000, kMaxLines, 100000, "items (TPC-C: 100000)");
  remote_ = p.real("remote_percent", 1, 0, 100, "NewOrder: percentage of lines supplied by another warehouse");
  remote_payment_ = p.real("remote_payment_percent", 15, 0, 100, "Payment: percentage of remote customers");
  invalid_ = p.real("invalid_percent", 1, 0, 100, "NewOrder: percentage that name an unused item and roll back");
  keep_params(p);
}

void TpccLite::load(uint64_t begin, uint64_t end, const LoadSink& sink) const {
  for (uint64_t u = begin; u < end && u < load_units(); ++u) {
    if (u >= warehouses_) {
      const uint64_t i = u - warehouses_;
      sink(item_key(i), encode_row({static_cast<int64_t>(unit_rng(seed_, u).between(100, 10000))}));
      continue;
    }
    const uint64_t w = u;
    sink(warehouse_key(w), encode_row({initial_warehouse_ytd()}));
    for (uint64_t d = 0; d < districts_; ++d) {
      sink(district_key(w, d), encode_row({initial_district_ytd(), 1}));
      for (uint64_t c = 0; c < customers_; ++c) sink(customer_key(w, d, c), encode_row({-1000, 1000, 1}));
    }
    Rng r = unit_rng(seed_, u);
    for (uint64_t i = 0; i < items_; ++i) sink(stock_key(w, i), encode_row({int64_t(r.between(10, 100)), 0, 0, 0}));
  }
}

uint64_t TpccLite::other_warehouse(Rng& rng, uint64_t w) const {
  const uint64_t o = rng.below(warehouses_ - 1);
  return o >= w ? o + 1 : o;
}

rpc::Task<TxOutcome> TpccLite::run_one(txn::TxnService& svc, Rng& rng, Ledger& ledger) const {
  if (pick_type(rng) == 0) co_return co_await new_order(svc, rng);
  co_return co_await payment(svc, rng, ledger);
}

namespace {
// Decodes the reads of one transaction in order; the first failure decides the attempt's status.
struct RowReader {
  const std::vector<std::string>& keys;
  const std::vector<txn::Read>& reads;
  TxOutcome& out;
  bool ok = true;

  // nullopt and `out` set when the read failed, the row is missing (allowed only with may_miss) or corrupt.
  std::optional<std::vector<int64_t>> row(size_t i, size_t fields, bool may_miss = false) {
    if (!ok) return std::nullopt;
    const txn::Read& r = reads[i];
    if (read_failed(r)) {
      out.status = failed_read_status(r);
    } else if (r.status == Code::kNotFound) {
      if (may_miss) return std::nullopt;
      out.status = TxStatus::kDataError;
      out.error = fmt::format("row {} is missing", keys[i]);
    } else if (auto v = TpccLite::decode_row(r.value, fields)) {
      return v;
    } else {
      out.status = TxStatus::kDataError;
      out.error = fmt::format("row {} is corrupt: {}", keys[i], describe_value(r.value));
    }
    ok = false;
    return std::nullopt;
  }
};
}  // namespace

rpc::Task<TxOutcome> TpccLite::new_order(txn::TxnService& svc, Rng& rng) const {
  TxOutcome out;
  out.type = 0;
  const uint64_t w = rng.below(warehouses_), d = rng.below(districts_), c = rng.below(customers_);
  std::vector<OrderLine> lines(rng.between(kMinLines, kMaxLines));
  std::vector<uint64_t> items;
  while (items.size() < lines.size()) {
    const uint64_t i = rng.below(items_);
    if (std::find(items.begin(), items.end(), i) == items.end()) items.push_back(i);
  }
  const bool invalid = rng.chance(invalid_ / 100);
  if (invalid) items.back() = items_;  // an unused item id: TPC-C's rolled-back NewOrder
  std::vector<std::string> keys = {district_key(w, d), customer_key(w, d, c)};
  for (size_t k = 0; k < lines.size(); ++k) {
    lines[k].item = static_cast<int64_t>(items[k]);
    lines[k].supply = static_cast<int64_t>(warehouses_ > 1 && rng.chance(remote_ / 100) ? other_warehouse(rng, w) : w);
    lines[k].quantity = static_cast<int64_t>(rng.between(1, kMaxQuantity));
    keys.push_back(item_key(items[k]));
  }
  auto tx = svc.begin();
  tx->set_type(txn_types()[out.type]);
  std::vector<txn::Read> reads = co_await read_all(*tx, keys, parallel_gets_);
  RowReader rows{keys, reads, out};
  auto district = rows.row(0, 2);
  rows.row(1, 3);
  for (size_t k = 0; k < lines.size() && rows.ok; ++k) {
    const bool last_invalid = invalid && k + 1 == lines.size();
    auto price = rows.row(2 + k, 1, last_invalid);
    if (!price && rows.ok) {  // the unused item: roll back
      tx->abort();
      out.status = TxStatus::kRolledBack;
      co_return out;
    }
    if (price) lines[k].amount = (*price)[0] * lines[k].quantity;
  }
  std::vector<std::string> stock_keys;
  for (const OrderLine& l : lines) stock_keys.push_back(stock_key(l.supply, l.item));
  std::vector<txn::Read> stock_reads;
  if (rows.ok) stock_reads = co_await read_all(*tx, stock_keys, parallel_gets_);
  RowReader stocks{stock_keys, stock_reads, out, rows.ok};
  std::vector<std::vector<int64_t>> stock(lines.size());
  for (size_t k = 0; k < lines.size() && stocks.ok; ++k) {
    if (auto s = stocks.row(k, 4)) stock[k] = std::move(*s);
  }
  if (!stocks.ok) {
    out.status = co_await give_up(*tx, out.status, out.error);
    co_return out;
  }
  const int64_t o_id = (*district)[1];
  tx->put(district_key(w, d), encode_row({(*district)[0], o_id + 1}));
  for (size_t k = 0; k < lines.size(); ++k) {
    std::vector<int64_t>& s = stock[k];
    const int64_t q = lines[k].quantity;
    s[0] = s[0] >= q + 10 ? s[0] - q : s[0] - q + 91;
    s[1] += q;
    s[2] += 1;
    s[3] += lines[k].supply != static_cast<int64_t>(w) ? 1 : 0;
    tx->put(stock_keys[k], encode_row(s));
  }
  tx->put(order_key(w, d, static_cast<uint64_t>(o_id)), encode_order({static_cast<int64_t>(c), lines}));
  out.status = co_await commit(*tx);
  co_return out;
}

rpc::Task<TxOutcome> TpccLite::payment(txn::TxnService& svc, Rng& rng, Ledger& ledger) const {
  TxOutcome out;
  out.type = 1;
  const uint64_t w = rng.below(warehouses_), d = rng.below(districts_);
  const bool remote = warehouses_ > 1 && rng.chance(remote_payment_ / 100);
  const uint64_t cw = remote ? other_warehouse(rng, w) : w, cd = remote ? rng.below(districts_) : d;
  const uint64_t c = rng.below(customers_);
  const auto amount = static_cast<int64_t>(rng.between(100, 500000));
  const std::vector<std::string> keys = {warehouse_key(w), district_key(w, d), customer_key(cw, cd, c)};
  auto tx = svc.begin();
  tx->set_type(txn_types()[out.type]);
  std::vector<txn::Read> reads = co_await read_all(*tx, keys, parallel_gets_);
  RowReader rows{keys, reads, out};
  auto warehouse = rows.row(0, 1);
  auto district = rows.row(1, 2);
  auto customer = rows.row(2, 3);
  if (!rows.ok) {
    out.status = co_await give_up(*tx, out.status, out.error);
    co_return out;
  }
  tx->put(keys[0], encode_row({(*warehouse)[0] + amount}));
  tx->put(keys[1], encode_row({(*district)[0] + amount, (*district)[1]}));
  tx->put(keys[2], encode_row({(*customer)[0] - amount, (*customer)[1] + amount, (*customer)[2] + 1}));
  out.status = co_await commit(*tx);
  if (out.status == TxStatus::kCommitted) ledger.balance_delta += amount;
  if (out.status == TxStatus::kUnavailable && tx->outcome_unknown()) ledger.add_unknown(amount);
  co_return out;
}

}  // namespace rdx::workload
