#pragma once
// TPC-C-lite: TPC-C's two write transactions, NewOrder and Payment, on a reduced schema, with the consistency
// conditions that involve them checked after a run (RCC's third workload).
//
// Data (every row of warehouse w carries the hash tag {w<w>}, so a warehouse lives on one shard: the
// topology's hash tags, cluster/topology.h; items are shared and spread over the shards):
//   tc:{w<w>}:w               W_YTD                                          (cents)
//   tc:{w<w>}:d:<d>           D_YTD D_NEXT_O_ID                              (D_NEXT_O_ID starts at 1: no orders)
//   tc:{w<w>}:c:<d>:<c>       C_BALANCE C_YTD_PAYMENT C_PAYMENT_CNT          (-1000 1000 1)
//   tc:{w<w>}:s:<i>           S_QUANTITY S_YTD S_ORDER_CNT S_REMOTE_CNT      (10..100 0 0 0)
//   tc:{w<w>}:o:<d>:<o>       O_C_ID O_OL_CNT, then per line OL_I_ID:OL_SUPPLY_W_ID:OL_QUANTITY:OL_AMOUNT
//   tc:i:<i>                  I_PRICE                                        (100..10000 cents)
// Values are space-separated canonical decimals (SmallBank's decode_balance); one that does not decode is corrupt
// (TxStatus::kDataError).
// Initial W_YTD is the sum of the districts' D_YTD (TPC-C: 300000.00 and 30000.00 for 10 districts).
//
// Transactions (default mix 50/50):
//   NewOrder(w, d, c)   5..15 distinct items, 1..10 each, each supplied by w or (remote_percent) another
//                       warehouse; reads the district, the customer, the items and their stock; the order gets
//                       D_NEXT_O_ID, which is incremented; each stock row: S_QUANTITY down by the quantity (up by
//                       91 below 10, as TPC-C), S_YTD up by it, S_ORDER_CNT + 1, S_REMOTE_CNT + 1 if remote.
//                       invalid_percent of them name an unused item last and roll back (TPC-C's 1 %).
//   Payment(w, d, c)    amount 1.00..5000.00: W_YTD and D_YTD up, the customer's C_BALANCE down and
//                       C_YTD_PAYMENT up by it, C_PAYMENT_CNT + 1; the customer is remote_payment_percent of the
//                       time from another warehouse (TPC-C's 15 %).
// Consistency conditions checked (TPC-C 3.3.2, those these transactions touch), none needing a ledger:
//   1. W_YTD = sum of its districts' D_YTD
//   2. D_NEXT_O_ID - 1 = the largest order id of the district: orders 1..D_NEXT_O_ID-1 exist, D_NEXT_O_ID not yet
//   3. every order decodes, with O_OL_CNT lines of valid items
//   4. per stock row: S_YTD = the sum of its order lines' quantities, S_ORDER_CNT their count, S_REMOTE_CNT the
//      count of those ordered by another warehouse
//   5. per customer: C_BALANCE + C_YTD_PAYMENT = 0 (both start at -+10.00; Payment moves them by the same amount),
//      and the money paid in equals the money received: sum(C_YTD_PAYMENT - 1000) = sum(W_YTD - initial W_YTD),
//      which equals what the committed Payments paid (Ledger::balance_delta; when the run started at the load).
#include <optional>
#include <string>
#include <vector>

#include "workload/base.h"

namespace rdx::workload {

class TpccLite final : public WorkloadBase {
 public:
  explicit TpccLite(ParamReader& p);

  // Units [0, warehouses): a warehouse's rows; then one unit per item.
  uint64_t load_units() const override { return warehouses_ + items_; }
  void load(uint64_t begin, uint64_t end, const LoadSink& sink) const override;
  rpc::Task<TxOutcome> run_one(txn::TxnService& svc, Rng& rng, Ledger& ledger) const override;
  rpc::Task<InvariantReport> check(txn::TxnService& svc, const Ledger& merged) const override;

  static std::string warehouse_key(uint64_t w);
  static std::string district_key(uint64_t w, uint64_t d);
  static std::string customer_key(uint64_t w, uint64_t d, uint64_t c);
  static std::string stock_key(uint64_t w, uint64_t i);
  static std::string order_key(uint64_t w, uint64_t d, uint64_t o);
  static std::string item_key(uint64_t i);

  // A row's space-separated decimals, exactly `count` of them (nullopt: corrupt).
  static std::optional<std::vector<int64_t>> decode_row(std::string_view text, size_t count);
  static std::string encode_row(const std::vector<int64_t>& fields);

  struct OrderLine {
    int64_t item = 0, supply = 0, quantity = 0, amount = 0;
  };
  struct Order {
    int64_t customer = 0;
    std::vector<OrderLine> lines;
  };
  static std::string encode_order(const Order& o);
  static std::optional<Order> decode_order(std::string_view text);

  static constexpr size_t kMinLines = 5, kMaxLines = 15;    // per order
  static constexpr int64_t kMaxQuantity = 10;               // per order line
  static constexpr int64_t kOrdersPerRead = 200;            // orders per read-only transaction of the check
  static constexpr int64_t kMaxOrdersChecked = 10'000'000;  // per district

 private:
  struct Check;
  rpc::Task<TxOutcome> new_order(txn::TxnService& svc, Rng& rng) const;
  rpc::Task<TxOutcome> payment(txn::TxnService& svc, Rng& rng, Ledger& ledger) const;
  uint64_t other_warehouse(Rng& rng, uint64_t w) const;
  int64_t initial_district_ytd() const { return 3'000'000; }
  int64_t initial_warehouse_ytd() const { return initial_district_ytd() * static_cast<int64_t>(districts_); }

  uint64_t warehouses_, districts_, customers_, items_;
  double remote_, remote_payment_, invalid_;
};

}  // namespace rdx::workload
