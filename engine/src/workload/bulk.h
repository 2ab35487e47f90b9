#pragma once
// Bulk operations through the transaction layer: writing a workload's initial data, and reading all of it back for
// invariant checks. Both run on the calling worker's TxnService with many operations in flight.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "rpc/task.h"
#include "txn/txn.h"
#include "workload/workload.h"

namespace rdx::workload {

struct LoadOptions {
  size_t in_flight = 64;  // writes (or load transactions) outstanding at once
  // Keys per "load" transaction (0 counts as 1). History recording captures them, so the checker knows every
  // initial version exactly (its load_type).
  size_t keys_per_txn = 0;
  int max_attempts = 50;  // per write or transaction (aborts and unavailability are retried)
};

struct LoadStats {
  uint64_t records = 0;
  uint64_t retries = 0;
};

// Writes the initial data of units [begin, end). Fails (kUnavailable) when a write still fails after max_attempts.
rpc::Task<Result<LoadStats>> load_units(txn::TxnService& svc, const Workload& w, uint64_t begin, uint64_t end,
                                        LoadOptions options = {});

struct ScanOptions {
  size_t units_per_txn = 16;
  size_t txns_in_flight = 16;
  int max_attempts = 50;
};

// Reads every unit's keys (keys_of(unit, keys) fills them) in read-only transactions of type "InvariantCheck" and
// calls visit(unit, keys, reads) for units 0..units-1 in order. Fails if a transaction keeps aborting.
using UnitKeys = std::function<void(uint64_t unit, std::vector<std::string>& keys)>;
using UnitVisit =
    std::function<void(uint64_t unit, const std::vector<std::string>& keys, const std::vector<txn::Read>& reads)>;
rpc::Task<Status> scan_units(txn::TxnService& svc, uint64_t units, const UnitKeys& keys_of, const UnitVisit& visit,
                             ScanOptions options = {});

}  // namespace rdx::workload
