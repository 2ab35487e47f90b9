#pragma once
// Strict-serializability checker for recorded histories (txn::TxRecord: reads with the version seen, writes with the
// version created, commit/abort, real-time interval).
//
// Model. Versions of a key are integers that increase along the key's history, so the committed writes of a key,
// sorted by version, are its version order. The committed transactions are nodes of a dependency graph (Adya):
//   ww  writer of version v -> writer of the next version of the same key
//   wr  writer of version v -> every reader of v
//   rw  reader of v -> writer of the next version after v (anti-dependency)
//   rt  T1 -> T2 when T1.end + rt_slack_ns < T2.start (real time; encoded through a chain of auxiliary time nodes,
//       one per transaction in end order, so there are O(n) edges, not O(n^2))
// The history is strictly serializable iff the graph is acyclic (given the version orders). Cycles are found with an
// iterative Tarjan SCC pass (no recursion, memory linear in transactions + operations). Inside the cyclic components,
// every two-transaction cycle is reported on its own (dependencies both ways, or a dependency whose target ended
// before its source began); then one shortest cycle per component that holds none of those, found with the weakest
// edge set that closes it. Classes: ww only (G0), ww+wr (G1c), one rw (G-single: lost update, read skew, fractured
// read), several rw (G2: write skew), or needing rt edges (serializable, but not strictly serializable). Counts of
// longer cycles are lower bounds (a component can merge several); the verdict is exact.
//
// Initial state. A key's state before the history is:
//   - the version written by a committed record of type options.load_type (the load phase), if any (the highest
//     such version if the load wrote the key more than once); load records are not checked themselves;
//   - otherwise, with options.infer_initial (default on), the version read by the first reader of a version that no
//     recorded transaction wrote and that is below every committed version of the key (the run started on data that
//     was loaded without recording); a second, different such version is an unwritten read;
//   - otherwise absent.
// Unknown outcomes. A record with unknown=true (its coordinator could not learn whether it committed) counts as
// committed when a committed transaction read a version it wrote (repeatedly: what a promoted record read may
// promote others), unless a committed transaction also created one of its versions (then it did not commit) or
// another unknown record wrote the version read (then the read proves neither). Promoted, it has no end: it may
// have taken effect after its coordinator gave up (a recovery or a new primary decided it later), so no real-time
// edge leaves it. Otherwise it is left out, as nothing committed depends on it.
//
// Reads of version v != 0 must name a committed non-delete version, the key's initial version, or are reported
// (aborted read G1a when an aborted record wrote it, read of a delete's version, read of own write, unwritten read).
//
// Absent reads (version 0) and deletes. A delete is a committed write with deleted=true; it creates a version like
// any write (so it is in the version order), and after it the key reads as absent (version 0). An absent read is
// attributed to one "absent state": the initial state (if the key started absent) or one of the key's deletes:
//   1. if the reader also wrote the key (read-modify-write), it must have read the state its own write replaced: the
//      version right before its write must be a delete or the absent initial state, otherwise it is reported;
//   2. otherwise the candidates are filtered by real time (the delete's writer must not start after the reader ended;
//      the writer of the following version must not have ended before the reader started); none left is a
//      violation, exactly one gives the read its edges, several leave the read unresolved (no edges: sound, never a
//      false alarm, counted in stats.unresolved_absent_reads).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "txn/history.h"

namespace rdx::checker {

enum class Anomaly : uint8_t {
  kG0,              // cycle of write dependencies only (dirty writes)
  kG1c,             // cycle of write and read dependencies (circular information flow)
  kGSingle,         // cycle with exactly one anti-dependency (lost update, read skew, fractured read)
  kG2,              // cycle with two or more anti-dependencies (write skew)
  kRealTime,        // acyclic without real-time edges: serializable, but a later transaction was ordered first
  kAbortedRead,     // G1a: read a version that only an aborted transaction wrote
  kUnwrittenRead,   // read a version that no transaction wrote and that is not the key's initial version
  kDeletedRead,     // read the version created by a delete as if it were a value
  kOwnWriteRead,    // read the version its own write created (buffered writes have no version before commit)
  kAbsentRead,      // read a key as absent at a point where no absent state of the key fits
  kDuplicateWrite,  // two committed transactions created the same version of a key
};
inline constexpr size_t kAnomalyKinds = 11;
const char* anomaly_name(Anomaly a);         // "G-single", "aborted-read (G1a)", ...
const char* anomaly_description(Anomaly a);  // one sentence

enum class EdgeKind : uint8_t { kWW, kWR, kRW, kRT };
const char* edge_name(EdgeKind e);  // "ww", "wr", "rw", "rt"

struct TxnRef {
  uint64_t id = 0;
  std::string type;
};

// One edge of a reported cycle, with what justifies it.
struct CycleStep {
  TxnRef from, to;
  EdgeKind kind = EdgeKind::kWW;
  std::string key;            // ww/wr/rw: the key; empty for rt
  uint64_t from_version = 0;  // ww: from's version; wr: version read; rw: version read by `from` (0 = absent)
  uint64_t to_version = 0;    // ww/rw: to's version; wr: same as from_version
  int64_t from_end_ns = 0;    // rt: from ended ...
  int64_t to_start_ns = 0;    // ... before to started
};

struct Violation {
  Anomaly kind = Anomaly::kG0;
  std::string message;           // self-contained, names transactions, keys and versions
  std::vector<TxnRef> txns;      // the transactions involved
  std::vector<CycleStep> cycle;  // for cycle kinds: the cycle, in order (last step returns to the first txn)
};

struct CheckOptions {
  std::string load_type = "load";  // committed records of this type are the initial state (see above)
  bool infer_initial = true;
  int64_t rt_slack_ns = 0;      // tolerated clock skew between coordinators; 0 on one machine
  bool check_real_time = true;  // false: check serializability only
  size_t max_examples = 10;     // detailed violations kept per kind (all are counted)
};

struct CheckStats {
  uint64_t committed = 0, aborted = 0, load = 0;
  uint64_t unknown = 0, unknown_committed = 0;  // unknown outcomes; those counted committed (in `committed` too)
  uint64_t keys = 0, versions = 0, reads = 0;
  uint64_t edges = 0;  // dependency + real-time edges (including the auxiliary time chain)
  uint64_t unresolved_absent_reads = 0;
  double index_ms = 0, graph_ms = 0, cycles_ms = 0;  // phase wall-clock times
  double cpu_ms = 0;                                 // process CPU time of the whole check (immune to a busy host)
};

struct CheckReport {
  std::vector<Violation> violations;             // up to max_examples per kind
  std::array<uint64_t, kAnomalyKinds> counts{};  // every violation found, per kind
  CheckStats stats;
  bool ok() const;
  uint64_t total() const;
};

// Checks the committed transactions of `history`. Errors (kInvalidArgument) are for malformed input only: duplicate
// ids, end before start, a committed or unknown write of version 0. Anomalies are in the report, not errors.
Result<CheckReport> check_history(const std::vector<txn::TxRecord>& history, const CheckOptions& options = {});

// Human-readable verdict: a summary line, counts per kind, each reported violation and the statistics.
std::string format_report(const CheckReport& report);

}  // namespace rdx::checker
