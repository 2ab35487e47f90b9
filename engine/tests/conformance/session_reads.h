#pragma once
// The read rule of a replication protocol whose reads are sequentially consistent (Reads::kSequential: zab's local
// reads), checked per key on a single-key history whose writes are checked linearizable apart (the strict-
// serializability checker on the history without its reads). A read of key k by session s must return:
//   - a version some recorded write of k created (or absence: the initial state, or a delete's version), whose write
//     began before the read returned (never a value from the future);
//   - nothing older than what s last wrote, read, or saw (a read-modify-write's prior version) of k: versions of a
//     key increase along its write order, so "older" is a smaller version (absence: the smallest delete's version
//     at or above that floor, or the initial state while the floor is 0).
// It may return an older version than the newest completed write otherwise: that is what sequential consistency
// allows and linearizability does not.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "txn/history.h"

namespace rdx::conformance {

struct SessionReadReport {
  size_t reads = 0;                // reads checked
  size_t stale = 0;                // reads older than the newest write completed before they began (allowed)
  std::vector<std::string> wrong;  // reads that break the rule, described (the first few)
  size_t wrong_count = 0;
};

// `session_of` names a record's session (its client: requests of one session run one at a time); `is_read` says
// which records are reads (their `reads` are checked, their `writes` must be empty).
SessionReadReport check_session_reads(const std::vector<txn::TxRecord>& history,
                                      const std::function<uint64_t(const txn::TxRecord&)>& session_of,
                                      const std::function<bool(const txn::TxRecord&)>& is_read);

}  // namespace rdx::conformance
