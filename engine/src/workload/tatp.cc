#include "workload/tatp.h"

#include <fmt/format.h>

#include "workload/bulk.h"
#include "workload/exec.h"

namespace rdx::workload {

using namespace tatp;

namespace {

// Looks at one read of a row: nullopt to go on (row set if the key exists), or the status to stop with (a failed
// read, or a value that does not decode: kDataError with `error` set).
template <typename Row, typename Decode>
std::optional<TxStatus> examine(const txn::Read& r, const std::string& key, Decode decode, std::optional<Row>& row,
                                std::string& error) {
  row.reset();
  if (read_failed(r)) return failed_read_status(r);
  if (r.status == Code::kNotFound) return std::nullopt;
  row = decode(r.value);
  if (row) return std::nullopt;
  error = fmt::format("key {} holds a corrupt row {}", key, describe_value(r.value));
  return TxStatus::kDataError;
}

// A row that TATP never deletes (subscriber) is missing.
TxStatus missing(const std::string& key, std::string& error) {
  error = fmt::format("key {} is missing", key);
  return TxStatus::kDataError;
}

}  // namespace

Tatp::Tatp(ParamReader& p)
    : WorkloadBase("tatp", {"GetSubscriberData", "GetNewDestination", "GetAccessData", "UpdateSubscriberData",
                            "UpdateLocation", "InsertCallForwarding", "DeleteCallForwarding"}) {
  read_common(p, {35, 10, 35, 2, 14, 2, 2});
  subscribers_ = p.u64("subscribers", 100000, 1, 1'000'000'000, "number of subscribers (about 10 keys each)");
  bool nurand = p.flag("nurand", true, "TATP's non-uniform subscriber choice (0: uniform)");
  single_key_reads_ =
      p.flag("single_key_reads", false, "GetSubscriberData and GetAccessData as single-key reads (not transactions)");
  uint64_t a = subscribers_ <= 1'000'000 ? 65535 : subscribers_ <= 10'000'000 ? 1048575 : 2097151;
  chooser_ = nurand ? KeyChooser::nurand(subscribers_, a) : KeyChooser::uniform(subscribers_);
  keep_params(p);
}

void Tatp::load(uint64_t begin, uint64_t end, const LoadSink& sink) const {
  for (uint64_t u = begin; u < end && u < subscribers_; ++u) {
    const uint64_t s_id = u + 1;
    const Population pop = populate(seed_, s_id);
    sink(subscriber_key(s_id), encode(pop.subscriber));
    for (unsigned t = 1; t <= 4; ++t) {
      if (pop.access_info[t - 1]) sink(access_info_key(s_id, t), encode(*pop.access_info[t - 1]));
      if (pop.special_facility[t - 1]) sink(special_facility_key(s_id, t), encode(*pop.special_facility[t - 1]));
      for (size_t i = 0; i < kStartTimes.size(); ++i) {
        if (pop.call_forwarding[t - 1][i]) {
          sink(call_forwarding_key(s_id, t, kStartTimes[i]), encode(*pop.call_forwarding[t - 1][i]));
        }
      }
    }
  }
}

TatpPlan Tatp::plan(Rng& rng) const {
  TatpPlan p;
  p.type = static_cast<TatpType>(pick_type(rng));
  p.s_id = chooser_.next(rng) + 1;
  p.ai_type = static_cast<unsigned>(rng.between(1, 4));
  p.sf_type = static_cast<unsigned>(rng.between(1, 4));
  p.start_time = kStartTimes[rng.below(3)];
  switch (p.type) {
    case TatpType::kGetNewDestination:
      p.end_time = static_cast<uint8_t>(rng.between(1, 24));
      break;
    case TatpType::kUpdateSubscriberData:
      p.bit = rng.below(2) == 1;
      p.data_a = static_cast<uint8_t>(rng.below(256));
      break;
    case TatpType::kUpdateLocation:
      p.vlr_location = static_cast<uint32_t>(rng.between(1, UINT32_MAX));
      break;
    case TatpType::kInsertCallForwarding:
      p.end_time = static_cast<uint8_t>(p.start_time + rng.between(1, 8));
      p.numberx = random_chars<15>(rng, '0', 10);
      break;
    default:
      break;
  }
  return p;
}

rpc::Task<TxOutcome> Tatp::run_one(txn::TxnService& svc, Rng& rng, Ledger&) const {
  const TatpPlan p = plan(rng);
  TxOutcome out;
  out.type = static_cast<uint16_t>(p.type);
  if (single_key_reads_ && (p.type == TatpType::kGetSubscriberData || p.type == TatpType::kGetAccessData)) {
    out.status = co_await single_read(svc, p, out.error);
    co_return out;
  }
  auto tx = svc.begin();
  tx->set_type(txn_types()[out.type]);
  switch (p.type) {
    case TatpType::kGetSubscriberData:
      out.status = co_await get_subscriber_data(*tx, p, out.error);
      break;
    case TatpType::kGetNewDestination:
      out.status = co_await get_new_destination(*tx, p, out.error);
      break;
    case TatpType::kGetAccessData:
      out.status = co_await get_access_data(*tx, p, out.error);
      break;
    case TatpType::kUpdateSubscriberData:
      out.status = co_await update_subscriber_data(*tx, p, out.error);
      break;
    case TatpType::kUpdateLocation:
      out.status = co_await update_location(*tx, p, out.error);
      break;
    case TatpType::kInsertCallForwarding:
      out.status = co_await insert_call_forwarding(*tx, p, out.error);
      break;
    case TatpType::kDeleteCallForwarding:
      out.status = co_await delete_call_forwarding(*tx, p, out.error);
      break;
  }
  co_return out;
}

rpc::Task<TxStatus> Tatp::single_read(txn::TxnService& svc, const TatpPlan& p, std::string& error) const {
  const bool sub = p.type == TatpType::kGetSubscriberData;
  const std::string key = sub ? subscriber_key(p.s_id) : access_info_key(p.s_id, p.ai_type);
  txn::Read r = co_await svc.read_one(key);
  if (read_failed(r)) co_return failed_read_status(r);  // includes a locked or not-yet-readable key
  if (r.status == Code::kNotFound) {
    if (sub) co_return missing(key, error);
    co_return TxStatus::kCommitted;
  }
  bool valid = sub ? decode_subscriber(r.value).has_value() : decode_access_info(r.value).has_value();
  if (valid) co_return TxStatus::kCommitted;
  error = fmt::format("key {} holds a corrupt row {}", key, describe_value(r.value));
  co_return TxStatus::kDataError;
}

rpc::Task<TxStatus> Tatp::get_subscriber_data(txn::Transaction& tx, const TatpPlan& p, std::string& error) const {
  const std::string key = subscriber_key(p.s_id);
  txn::Read r = co_await tx.get(key);
  std::optional<Subscriber> row;
  std::optional<TxStatus> stop = examine(r, key, decode_subscriber, row, error);
  if (!stop && !row) stop = missing(key, error);
  if (stop) {
    co_return co_await give_up(tx, *stop, error);
  }
  co_return co_await commit(tx);
}

rpc::Task<TxStatus> Tatp::get_new_destination(txn::Transaction& tx, const TatpPlan& p, std::string& error) const {
  const std::string sf_key = special_facility_key(p.s_id, p.sf_type);
  txn::Read r = co_await tx.get(sf_key);
  std::optional<SpecialFacility> sf;
  if (auto stop = examine(r, sf_key, decode_special_facility, sf, error)) {
    co_return co_await give_up(tx, *stop, error);
  }
  if (sf && sf->is_active) {
    std::vector<std::string> keys;
    for (uint8_t start : kStartTimes) {
      if (start <= p.start_time) keys.push_back(call_forwarding_key(p.s_id, p.sf_type, start));
    }
    std::vector<txn::Read> reads = co_await read_all(tx, keys, parallel_gets_);
    for (size_t i = 0; i < keys.size(); ++i) {
      std::optional<CallForwarding> cf;
      if (auto stop = examine(reads[i], keys[i], decode_call_forwarding, cf, error)) {
        co_return co_await give_up(tx, *stop, error);
      }
      // A row with end_time > p.end_time is a new destination; the answer itself is not needed here.
    }
  }
  co_return co_await commit(tx);
}

rpc::Task<TxStatus> Tatp::get_access_data(txn::Transaction& tx, const TatpPlan& p, std::string& error) const {
  const std::string key = access_info_key(p.s_id, p.ai_type);
  txn::Read r = co_await tx.get(key);
  std::optional<AccessInfo> row;
  if (auto stop = examine(r, key, decode_access_info, row, error)) {
    co_return co_await give_up(tx, *stop, error);
  }
  co_return co_await commit(tx);
}

rpc::Task<TxStatus> Tatp::update_subscriber_data(txn::Transaction& tx, const TatpPlan& p, std::string& error) const {
  std::vector<std::string> keys{subscriber_key(p.s_id), special_facility_key(p.s_id, p.sf_type)};
  std::vector<txn::Read> reads = co_await read_all(tx, keys, parallel_gets_);
  std::optional<Subscriber> sub;
  std::optional<SpecialFacility> sf;
  std::optional<TxStatus> stop = examine(reads[0], keys[0], decode_subscriber, sub, error);
  if (!stop) stop = examine(reads[1], keys[1], decode_special_facility, sf, error);
  if (!stop && !sub) stop = missing(keys[0], error);
  if (!stop && !sf) stop = TxStatus::kRolledBack;  // no such special facility
  if (stop) {
    co_return co_await give_up(tx, *stop, error);
  }
  sub->bits = static_cast<uint16_t>((sub->bits & ~1u) | (p.bit ? 1u : 0u));  // bit_1
  sf->data_a = p.data_a;
  tx.put(keys[0], encode(*sub));
  tx.put(keys[1], encode(*sf));
  co_return co_await commit(tx);
}

rpc::Task<TxStatus> Tatp::update_location(txn::Transaction& tx, const TatpPlan& p, std::string& error) const {
  const std::string key = subscriber_key(p.s_id);  // sub_nbr(s_id) maps back to s_id
  txn::Read r = co_await tx.get(key);
  std::optional<Subscriber> sub;
  std::optional<TxStatus> stop = examine(r, key, decode_subscriber, sub, error);
  if (!stop && !sub) stop = missing(key, error);
  if (stop) {
    co_return co_await give_up(tx, *stop, error);
  }
  sub->vlr_location = p.vlr_location;
  tx.put(key, encode(*sub));
  co_return co_await commit(tx);
}

rpc::Task<TxStatus> Tatp::insert_call_forwarding(txn::Transaction& tx, const TatpPlan& p, std::string& error) const {
  std::vector<std::string> keys{special_facility_key(p.s_id, p.sf_type),
                                call_forwarding_key(p.s_id, p.sf_type, p.start_time)};
  std::vector<txn::Read> reads = co_await read_all(tx, keys, parallel_gets_);
  std::optional<SpecialFacility> sf;
  std::optional<CallForwarding> cf;
  std::optional<TxStatus> stop = examine(reads[0], keys[0], decode_special_facility, sf, error);
  if (!stop) stop = examine(reads[1], keys[1], decode_call_forwarding, cf, error);
  if (!stop && (!sf || cf)) stop = TxStatus::kRolledBack;  // foreign key missing, or primary key taken
  if (stop) {
    co_return co_await give_up(tx, *stop, error);
  }
  CallForwarding row;
  row.end_time = p.end_time;
  row.numberx = p.numberx;
  tx.put(keys[1], encode(row));
  co_return co_await commit(tx);
}

rpc::Task<TxStatus> Tatp::delete_call_forwarding(txn::Transaction& tx, const TatpPlan& p, std::string& error) const {
  const std::string key = call_forwarding_key(p.s_id, p.sf_type, p.start_time);
  txn::Read r = co_await tx.get(key);
  std::optional<CallForwarding> cf;
  std::optional<TxStatus> stop = examine(r, key, decode_call_forwarding, cf, error);
  if (!stop && !cf) stop = TxStatus::kRolledBack;  // nothing to delete
  if (stop) {
    co_return co_await give_up(tx, *stop, error);
  }
  tx.remove(key);
  co_return co_await commit(tx);
}

}  // namespace rdx::workload
