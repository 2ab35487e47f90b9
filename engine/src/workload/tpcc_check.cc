// TPC-C-lite's consistency conditions (tpcc.h), read back after a run through read-only transactions.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "workload/bulk.h"
#include "workload/exec.h"
#include "workload/tpcc.h"

namespace rdx::workload {

// What the scans accumulate, and the problems they find (the first few kept).
struct TpccLite::Check {
  InvariantReport report;
  uint64_t problems = 0;
  void problem(std::string p) {
    if (++problems <= 10) report.problems.push_back(std::move(p));
  }
  std::optional<std::vector<int64_t>> row(const std::string& key, const txn::Read& r, size_t fields) {
    if (r.status != Code::kOk) {
      problem(fmt::format("{}: missing", key));
      return std::nullopt;
    }
    auto v = decode_row(r.value, fields);
    if (!v) problem(fmt::format("{}: corrupt {}", key, describe_value(r.value)));
    return v;
  }

  std::vector<int64_t> next_order;  // per district (w * districts + d): D_NEXT_O_ID
  struct StockSums {
    int64_t quantity = 0, lines = 0, remote = 0;
  };
  std::unordered_map<uint64_t, StockSums> ordered;  // per stock row ordered (w * items + i): what the orders say
  int64_t warehouse_income = 0, customer_payments = 0, orders = 0, lines = 0;
};

rpc::Task<InvariantReport> TpccLite::check(txn::TxnService& svc, const Ledger& merged) const {
  Check ck;
  ck.report.checked = true;
  ck.next_order.assign(warehouses_ * districts_, 0);
  const auto D = districts_;

  // 1. W_YTD = sum(D_YTD); the districts' D_NEXT_O_ID for 2.
  Status s = co_await scan_units(
      svc, warehouses_,
      [D](uint64_t w, std::vector<std::string>& keys) {
        keys.push_back(warehouse_key(w));
        for (uint64_t d = 0; d < D; ++d) keys.push_back(district_key(w, d));
      },
      [&](uint64_t w, const std::vector<std::string>& keys, const std::vector<txn::Read>& reads) {
        auto wh = ck.row(keys[0], reads[0], 1);
        int64_t districts_ytd = 0;
        bool all = wh.has_value();
        for (uint64_t d = 0; d < D; ++d) {
          auto dr = ck.row(keys[1 + d], reads[1 + d], 2);
          all = all && dr.has_value();
          if (!dr) continue;
          districts_ytd += (*dr)[0];
          ck.next_order[w * D + d] = (*dr)[1];
          if ((*dr)[1] < 1) ck.problem(fmt::format("{}: D_NEXT_O_ID {} below 1", keys[1 + d], (*dr)[1]));
        }
        if (!all) return;
        ck.warehouse_income += (*wh)[0] - initial_warehouse_ytd();
        if ((*wh)[0] != districts_ytd)
          ck.problem(fmt::format("condition 1: {} W_YTD {} != sum of D_YTD {}", keys[0], (*wh)[0], districts_ytd));
      });

  // 2, 3. Orders 1..D_NEXT_O_ID-1 exist and decode, D_NEXT_O_ID does not exist; their lines feed 4. Read in chunks of
  // kOrdersPerRead orders per transaction (one district's orders may be many more than one commit batch holds).
  struct Chunk {
    uint64_t district;    // w * D + d
    int64_t first, last;  // order ids; `last` is D_NEXT_O_ID in a district's last chunk
  };
  std::vector<Chunk> chunks;
  for (uint64_t wd = 0; wd < ck.next_order.size(); ++wd) {
    const int64_t next = ck.next_order[wd];
    if (next > kMaxOrdersChecked) {
      ck.problem(fmt::format("{}: D_NEXT_O_ID {} is more orders than a check reads ({})", district_key(wd / D, wd % D),
                             next, kMaxOrdersChecked));
      continue;
    }
    for (int64_t first = 1; first <= next; first += kOrdersPerRead)
      chunks.push_back({wd, first, std::min(next, first + kOrdersPerRead - 1)});
  }
  if (s.is_ok()) {
    ScanOptions one_chunk;
    one_chunk.units_per_txn = 1;
    s = co_await scan_units(
        svc, chunks.size(),
        [&](uint64_t c, std::vector<std::string>& keys) {
          const Chunk& ch = chunks[c];
          for (int64_t o = ch.first; o <= ch.last; ++o) keys.push_back(order_key(ch.district / D, ch.district % D, o));
        },
        [&](uint64_t c, const std::vector<std::string>& keys, const std::vector<txn::Read>& reads) {
          const Chunk& ch = chunks[c];
          const auto w = static_cast<int64_t>(ch.district / D);
          for (size_t k = 0; k < keys.size(); ++k) {
            const bool beyond = ch.first + static_cast<int64_t>(k) == ck.next_order[ch.district];
            if (beyond) {
              if (reads[k].status != Code::kNotFound) ck.problem(fmt::format("condition 2: {} exists", keys[k]));
              continue;
            }
            if (reads[k].status != Code::kOk) {
              ck.problem(fmt::format("condition 2: {} is missing", keys[k]));
              continue;
            }
            auto o = decode_order(reads[k].value);
            if (!o || o->lines.size() < kMinLines || o->lines.size() > kMaxLines) {
              ck.problem(fmt::format("condition 3: {} is corrupt: {}", keys[k], describe_value(reads[k].value)));
              continue;
            }
            ++ck.orders;
            for (const OrderLine& l : o->lines) {
              if (l.item < 0 || uint64_t(l.item) >= items_ || l.supply < 0 || uint64_t(l.supply) >= warehouses_ ||
                  l.quantity < 1 || l.quantity > kMaxQuantity) {
                ck.problem(
                    fmt::format("condition 3: {} has a bad line {}:{}:{}", keys[k], l.item, l.supply, l.quantity));
                continue;
              }
              Check::StockSums& sum = ck.ordered[uint64_t(l.supply) * items_ + uint64_t(l.item)];  // (a new one: 0)
              sum.quantity += l.quantity;
              sum.lines += 1;
              sum.remote += l.supply != w ? 1 : 0;
              ++ck.lines;
            }
          }
        },
        one_chunk);
  }

  // 4. Each stock row's S_YTD, S_ORDER_CNT and S_REMOTE_CNT are what the order lines say.
  if (s.is_ok()) {
    s = co_await scan_units(
        svc, warehouses_ * items_,
        [this](uint64_t wi, std::vector<std::string>& keys) { keys.push_back(stock_key(wi / items_, wi % items_)); },
        [&](uint64_t wi, const std::vector<std::string>& keys, const std::vector<txn::Read>& reads) {
          auto st = ck.row(keys[0], reads[0], 4);
          if (!st) return;
          const auto it = ck.ordered.find(wi);
          const Check::StockSums sum = it == ck.ordered.end() ? Check::StockSums{} : it->second;
          if ((*st)[1] != sum.quantity || (*st)[2] != sum.lines || (*st)[3] != sum.remote) {
            ck.problem(fmt::format("condition 4: {} S_YTD/S_ORDER_CNT/S_REMOTE_CNT {}/{}/{}, the orders say {}/{}/{}",
                                   keys[0], (*st)[1], (*st)[2], (*st)[3], sum.quantity, sum.lines, sum.remote));
          }
        });
  }

  // 5. C_BALANCE + C_YTD_PAYMENT = 0 per customer; what customers paid is what warehouses received.
  if (s.is_ok()) {
    const auto C = customers_;
    s = co_await scan_units(
        svc, warehouses_ * D,
        [D, C](uint64_t wd, std::vector<std::string>& keys) {
          for (uint64_t c = 0; c < C; ++c) keys.push_back(customer_key(wd / D, wd % D, c));
        },
        [&](uint64_t, const std::vector<std::string>& keys, const std::vector<txn::Read>& reads) {
          for (size_t k = 0; k < keys.size(); ++k) {
            auto cu = ck.row(keys[k], reads[k], 3);
            if (!cu) continue;
            ck.customer_payments += (*cu)[1] - 1000;
            if ((*cu)[0] + (*cu)[1] != 0)
              ck.problem(
                  fmt::format("condition 5: {} C_BALANCE {} + C_YTD_PAYMENT {} != 0", keys[k], (*cu)[0], (*cu)[1]));
          }
        });
  }
  if (!s.is_ok()) {
    ck.report.ok = false;
    ck.report.summary = "could not read the data back: " + s.to_string();
    co_return ck.report;
  }
  if (ck.customer_payments != ck.warehouse_income) {
    ck.problem(fmt::format("condition 5: customers paid {} cents, warehouses received {}", ck.customer_payments,
                           ck.warehouse_income));
  }
  // And exactly what the committed Payments paid (a lost update keeps 1 and 5, not this), when the run started on
  // freshly loaded data.
  if (merged.starts_at_load && !merged.explains(ck.warehouse_income)) {
    ck.problem(
        fmt::format("warehouses received {} cents, committed Payments paid {} (and Payments of unknown "
                    "outcome up to {})",
                    ck.warehouse_income, merged.balance_delta, merged.unknown_up));
  }
  ck.report.ok = ck.problems == 0;
  ck.report.summary =
      fmt::format("consistency conditions 1-5 {}: {} warehouses, {} orders with {} lines, {} cents paid{}",
                  ck.report.ok ? "hold" : "fail", warehouses_, ck.orders, ck.lines, ck.customer_payments,
                  ck.problems > 0 ? fmt::format(", {} problems", ck.problems) : "");
  co_return ck.report;
}

}  // namespace rdx::workload
