#pragma once
// TATP (Telecom Application Transaction Processing; the read-intensive workload of FaSST and Dandelion). Schema,
// keys and encodings: tatp_schema.h. Transactions (standard mix 35/10/35/2/14/2/2):
//   GetSubscriberData      read the subscriber row                                           (read-only)
//   GetNewDestination      read special_facility(s, sf_type); if active, the call_forwarding rows with
//                          start_time <= t (up to 3) and pick the one with end_time > e     (read-only)
//   GetAccessData          read access_info(s, ai_type); may be absent                       (read-only)
//   UpdateSubscriberData   set subscriber.bit_1 and special_facility(s, sf_type).data_a; rolls back if that
//                          special facility does not exist
//   UpdateLocation         set subscriber.vlr_location (looked up by sub_nbr, which maps to s_id)
//   InsertCallForwarding   insert call_forwarding(s, sf_type, start); rolls back if the special facility is
//                          missing or the row already exists
//   DeleteCallForwarding   delete call_forwarding(s, sf_type, start); rolls back if it does not exist
// Read-only queries that find nothing still commit (they read absent keys). s_id is TATP's non-uniform choice
// (nurand=1, A = 65535 / 1048575 / 2097151 by population size) or uniform.
// Invariant check: every subscriber row exists and decodes; access-info rows and the unchanging columns of
// special-facility rows equal the population; call-forwarding rows decode, fit their start time and exist only under
// an existing special facility.
#include "workload/base.h"
#include "workload/distributions.h"
#include "workload/tatp_schema.h"

namespace rdx::workload {

enum class TatpType : uint16_t {
  kGetSubscriberData,
  kGetNewDestination,
  kGetAccessData,
  kUpdateSubscriberData,
  kUpdateLocation,
  kInsertCallForwarding,
  kDeleteCallForwarding,
};

struct TatpPlan {
  TatpType type = TatpType::kGetSubscriberData;
  uint64_t s_id = 1;
  unsigned ai_type = 1, sf_type = 1;
  uint8_t start_time = 0, end_time = 1;
  bool bit = false;
  uint8_t data_a = 0;
  uint32_t vlr_location = 0;
  std::array<char, 15> numberx{};
};

class Tatp final : public WorkloadBase {
 public:
  explicit Tatp(ParamReader& p);

  uint64_t load_units() const override { return subscribers_; }  // unit u is s_id u + 1
  void load(uint64_t begin, uint64_t end, const LoadSink& sink) const override;
  rpc::Task<TxOutcome> run_one(txn::TxnService& svc, Rng& rng, Ledger& ledger) const override;
  rpc::Task<InvariantReport> check(txn::TxnService& svc, const Ledger& merged) const override;

  TatpPlan plan(Rng& rng) const;
  uint64_t subscribers() const { return subscribers_; }

 private:
  // One transaction body each, on a begun transaction; `error` explains kDataError. They commit, or abort and
  // return the reason.
  rpc::Task<TxStatus> get_subscriber_data(txn::Transaction& tx, const TatpPlan& p, std::string& error) const;
  rpc::Task<TxStatus> get_new_destination(txn::Transaction& tx, const TatpPlan& p, std::string& error) const;
  rpc::Task<TxStatus> get_access_data(txn::Transaction& tx, const TatpPlan& p, std::string& error) const;
  rpc::Task<TxStatus> update_subscriber_data(txn::Transaction& tx, const TatpPlan& p, std::string& error) const;
  rpc::Task<TxStatus> update_location(txn::Transaction& tx, const TatpPlan& p, std::string& error) const;
  rpc::Task<TxStatus> insert_call_forwarding(txn::Transaction& tx, const TatpPlan& p, std::string& error) const;
  rpc::Task<TxStatus> delete_call_forwarding(txn::Transaction& tx, const TatpPlan& p, std::string& error) const;
  // single_key_reads=1: GetSubscriberData and GetAccessData as single-key reads (TxnService::read_one: committed
  // values, no transaction, not in histories).
  rpc::Task<TxStatus> single_read(txn::TxnService& svc, const TatpPlan& p, std::string& error) const;

  uint64_t subscribers_;
  KeyChooser chooser_;
  bool single_key_reads_ = false;
};

}  // namespace rdx::workload
