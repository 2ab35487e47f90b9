// TATP's invariant check: reads every row a subscriber can have and compares it with what the population and the
// transactions allow.
#include <fmt/format.h>

#include "workload/bulk.h"
#include "workload/exec.h"
#include "workload/tatp.h"

namespace rdx::workload {

using namespace tatp;

namespace {

// Keys of subscriber s_id, in this order: subscriber, 4 access infos, 4 special facilities, 12 call forwardings.
void subscriber_keys(uint64_t s_id, std::vector<std::string>& keys) {
  keys.push_back(subscriber_key(s_id));
  for (unsigned t = 1; t <= 4; ++t) keys.push_back(access_info_key(s_id, t));
  for (unsigned t = 1; t <= 4; ++t) keys.push_back(special_facility_key(s_id, t));
  for (unsigned t = 1; t <= 4; ++t) {
    for (uint8_t start : kStartTimes) keys.push_back(call_forwarding_key(s_id, t, start));
  }
}

struct Tally {
  uint64_t rows = 0, bad = 0;
  std::vector<std::string> problems;
  void problem(std::string what) {
    if (++bad <= 10) problems.push_back(std::move(what));
  }
};

// Checks one subscriber's rows against its population.
void check_subscriber(const Population& pop, const std::vector<std::string>& keys, const std::vector<txn::Read>& reads,
                      Tally& t) {
  auto present = [&](size_t i) { return reads[i].status == Code::kOk; };
  for (size_t i = 0; i < keys.size(); ++i) t.rows += present(i);
  if (!present(0)) {
    t.problem(fmt::format("{}: missing", keys[0]));
  } else if (!decode_subscriber(reads[0].value)) {
    t.problem(fmt::format("{}: corrupt {}", keys[0], describe_value(reads[0].value)));
  }
  for (size_t a = 0; a < 4; ++a) {  // access info never changes
    size_t i = 1 + a;
    const auto& want = pop.access_info[a];
    if (present(i) != want.has_value()) {
      t.problem(fmt::format("{}: {} but the population {} it", keys[i], present(i) ? "present" : "missing",
                            want ? "has" : "does not have"));
    } else if (want && decode_access_info(reads[i].value) != want) {
      t.problem(fmt::format("{}: {} differs from the loaded row", keys[i], describe_value(reads[i].value)));
    }
  }
  for (size_t f = 0; f < 4; ++f) {  // special facilities keep their rows; only data_a changes
    size_t i = 5 + f;
    const auto& want = pop.special_facility[f];
    if (present(i) != want.has_value()) {
      t.problem(fmt::format("{}: {} but the population {} it", keys[i], present(i) ? "present" : "missing",
                            want ? "has" : "does not have"));
      continue;
    }
    if (!want) continue;
    auto got = decode_special_facility(reads[i].value);
    if (got) got->data_a = want->data_a;
    if (got != want) {
      t.problem(fmt::format("{}: {} differs from the loaded row", keys[i], describe_value(reads[i].value)));
    }
  }
  for (size_t f = 0; f < 4; ++f) {  // call forwardings come and go, under existing special facilities only
    for (size_t s = 0; s < kStartTimes.size(); ++s) {
      size_t i = 9 + 3 * f + s;
      if (!present(i)) continue;
      auto cf = decode_call_forwarding(reads[i].value);
      if (!cf || cf->end_time <= kStartTimes[s] || cf->end_time > kStartTimes[s] + 8) {
        t.problem(fmt::format("{}: corrupt or out-of-range {}", keys[i], describe_value(reads[i].value)));
      } else if (!pop.special_facility[f]) {
        t.problem(fmt::format("{}: exists without its special facility", keys[i]));
      }
    }
  }
}

}  // namespace

rpc::Task<InvariantReport> Tatp::check(txn::TxnService& svc, const Ledger&) const {
  InvariantReport report;
  report.checked = true;
  Tally tally;
  const UnitKeys keys_of = [](uint64_t u, std::vector<std::string>& keys) { subscriber_keys(u + 1, keys); };
  const UnitVisit visit = [&](uint64_t u, const std::vector<std::string>& keys, const std::vector<txn::Read>& reads) {
    check_subscriber(populate(seed_, u + 1), keys, reads, tally);
  };
  Status s = co_await scan_units(svc, subscribers_, keys_of, visit);
  if (!s.is_ok()) {
    report.ok = false;
    report.summary = "could not read the subscribers: " + s.to_string();
    co_return report;
  }
  report.ok = tally.bad == 0;
  report.problems = std::move(tally.problems);
  report.summary = fmt::format("{} subscribers, {} rows, {} problems", subscribers_, tally.rows, tally.bad);
  co_return report;
}

}  // namespace rdx::workload
