#pragma once
// The record of one transaction, as the history checker needs it: what it read (with the version it saw), what it
// wrote (with the version it created), its outcome (committed, aborted or unknown) and its real-time interval.
// Coordinators record these when history recording is on; rdx-bench collects them and the checker verifies strict
// serializability.
#include <cstdint>
#include <string>
#include <vector>

namespace rdx::txn {

// CLOCK_REALTIME in nanoseconds (histories' clock).
int64_t realtime_ns();

struct ReadRecord {
  std::string key;
  uint64_t version = 0;  // 0: the key was absent
};

struct WriteRecord {
  std::string key;
  uint64_t version = 0;  // the version this write created (versions of a key increase along its history)
  bool deleted = false;
};

struct TxRecord {
  uint64_t id = 0;       // unique per history: (coordinator node, worker, sequence)
  std::string type;      // workload transaction type, e.g. "Amalgamate"
  int64_t start_ns = 0;  // CLOCK_REALTIME at begin()
  int64_t end_ns = 0;    // CLOCK_REALTIME when the outcome was known
  bool committed = false;
  std::vector<ReadRecord> reads;
  std::vector<WriteRecord> writes;
  // The coordinator could not learn the outcome (committed is false): the transaction may or may not have taken
  // effect. Its writes are those whose version the coordinator learned (from the lock): the versions they would have
  // created. The checker counts it committed when a committed transaction read one of those versions, and leaves it
  // out otherwise.
  bool unknown = false;
};

}  // namespace rdx::txn
