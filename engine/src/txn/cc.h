#pragma once
// The transaction family: concurrency-control protocols. A protocol is one folder under engine/src/txn/ plus one
// line in protocols.def; the family's conformance suite (engine/tests/conformance/txn_conformance.cc) then runs on
// it. See README.md in this folder.
//
// The generic part (service.h) owns the transaction context: reads already done, buffered writes, preconditions,
// history and statistics. A protocol decides the rest, through three calls:
//   read(tx, key)   an execution-phase read of a key the transaction has not read or written yet: lock-based
//                   protocols lock here (NOWAIT, WAITDIE), multi-version ones pick the version for the
//                   transaction's timestamp (MVCC), lease-based ones take a lease (SUNDIAL), optimistic ones read the
//                   latest value (OCC, Dandelion; ReadPath does that)
//   commit(tx)      decides, replicates through the cluster's ReplicaLog (never to replicas directly), applies at
//                   the primaries with ReplicaLog::apply_at_primary, releases; fills tx.write_versions
//   abort(tx)       the transaction ends without commit: releases what read() took
// Deterministic protocols (CALVIN) get the keys up front in tx.declared (MULTI/EXEC declares them).
// Each phase may run over RPC or one-sided operations: the protocol's registry line says which phases it can run
// one-sided, and it honours CcEnv::primitives (topology transport.primitives), which the node checks against that.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/replica_log.h"
#include "cluster/worker_context.h"
#include "common/registry.h"
#include "rpc/task.h"
#include "txn/history.h"
#include "txn/txn.h"

namespace rdx::txn {

// Protocol phases, for the per-phase primitive choice (RCC's bitmask).
enum class Phase : uint8_t {
  kRead = 0,
  kLock,
  kValidate,
  kLog,
  kCommit,
  kRelease,
  kRenew,           // SUNDIAL lease renewal
  kInputBroadcast,  // CALVIN
  kValueForward,    // CALVIN
};
inline constexpr uint32_t phase_bit(Phase p) { return uint32_t{1} << static_cast<uint8_t>(p); }
// Phase names in the topology (transport.onesided_phases) and rdxd --list: read, lock, validate, log, commit,
// release, renew, input_broadcast, value_forward.
std::optional<Phase> phase_named(std::string_view name);
// The names of the phases in `bits`, in Phase order.
std::vector<std::string> phase_names(uint32_t bits);

// Which phases run one-sided (the rest over RPC).
struct Primitives {
  std::string mode = "rpc";  // rpc | onesided | hybrid (topology transport.primitives)
  uint32_t onesided = 0;
  bool onesided_for(Phase p) const { return (onesided & phase_bit(p)) != 0; }
};

// What a transaction is while it runs (owned by the generic Transaction; protocols read and fill it).
struct TxState {
  uint64_t id = 0;  // unique in the cluster (cluster::WorkerContext::next_writer_id); record locks carry it
  std::string type = "tx";
  int64_t start_ns = 0;  // CLOCK_REALTIME at begin (histories)
  std::chrono::steady_clock::time_point t0;
  const DeclaredKeys* declared = nullptr;
  bool failed = false;      // a read could not be served: the commit must report kUnavailable
  bool conflicted = false;  // a read met a conflict its protocol resolves by aborting (2PL): the commit aborts
  std::map<std::string, Read> reads;
  std::map<std::string, std::optional<std::string>> writes;  // nullopt: delete
  std::map<std::string, uint64_t> expects;                   // WATCH: key -> version (0 = absent)
  // Filled by commit: key -> the version its write created (committed), or would have created (outcome_unknown:
  // the keys whose lock answered).
  std::map<std::string, uint64_t> write_versions;
  bool outcome_unknown = false;  // set by commit with kUnavailable: the transaction may have taken effect
};

// Counters every protocol may add to (reported by the benchmark service and metrics).
struct TxnCounters {
  uint64_t local_reads = 0, remote_reads = 0, local_backup_reads = 0;
  uint64_t read_only_commits = 0;
  uint64_t lock_waits = 0;      // WAITDIE: a read that found its key held by a younger transaction and tried again
  uint64_t onesided_reads = 0;  // execution reads answered by a one-sided READ (remote_records.h)
};

// Test only: where a coordinator kills its own process (SIGKILL), to leave a transaction to coordinator recovery.
enum class CrashPoint : uint8_t {
  kNone,
  kAfterLock,       // every lock is taken, nothing decided
  kAfterReplicate,  // decided (the writes are at the backups), no participant released
  kMidUnlock,       // one participant released (committed), the others still hold their locks
};

// Faults a multi-process test plants (rdxd --test-crash, --test-fault); never set in production.
struct TxnTestFaults {
  // The crash at `crash_point` of a worker's N-th commit that locks at two or more nodes (N = crash_after).
  CrashPoint crash_point = CrashPoint::kNone;
  uint32_t crash_after = 0;
  bool recovery_always_aborts = false;  // a planted bug: coordinator recovery aborts what it must commit
};

// Switches a run may change (the topology sets the defaults; the benchmark service overrides them per run).
struct TxnOptions {
  bool local_backup_reads = true;  // execution reads may use this node's backup copy
  bool ht_batching = true;         // local reads of one worker-loop iteration go to the table as one batch
  bool record_history = false;
  bool validation_off =
      false;             // test only: a planted anomaly (commit does not check what was read) the checker must catch
  TxnTestFaults faults;  // test only
};

class ReadPath;

// What a protocol gets when its worker starts.
struct CcEnv {
  cluster::WorkerContext& ctx;
  cluster::ReplicaLog& log;
  ReadPath& reads;
  rpc::MsgRange msgs;  // its message types (its registry line)
  Primitives primitives;
  TxnCounters& counters;
  const TxnOptions& options;
  // Records a write the protocol makes on its own (coordinator recovery) in the history, while one is recorded.
  std::function<void(TxRecord)> record;
};

class ConcurrencyControl {
 public:
  virtual ~ConcurrencyControl() = default;
  // Registers the protocol's message handlers (only types in its range).
  virtual Status start() = 0;
  virtual rpc::Task<Read> read(TxState& tx, const std::string& key) = 0;
  virtual rpc::Task<Outcome> commit(TxState& tx) = 0;
  virtual void abort(TxState& tx) = 0;
};

struct CcEntry {
  std::string_view name;
  rpc::MsgRange msgs;  // inside cluster::msgs::kTxnBlock, disjoint from every other line's
  std::unique_ptr<ConcurrencyControl> (*make)(const CcEnv& env);
  uint32_t onesided_phases;  // phases it can run one-sided (0: RPC only)
  uint32_t hybrid_phases;    // the phases `hybrid` runs one-sided
  std::string_view summary;
};

const Registry<CcEntry>& cc_protocols();

// The primitives a topology asks for (rpc | onesided | hybrid, with hybrid's phases when `phases` names them), if
// the protocol honours them; else kUnsupported naming what it honours (kInvalidArgument: a name that is no phase).
Result<Primitives> primitives_for(const CcEntry& cc, std::string_view mode,
                                  const std::optional<std::vector<std::string>>& phases = std::nullopt);

}  // namespace rdx::txn
