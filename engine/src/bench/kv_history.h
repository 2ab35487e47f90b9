#pragma once
// rdx-bench --workload kv --history: every operation of the load and the run, in rdx-lincheck's format
// (engine/tools/lincheck/README.md), checked per key for linearizability by rdx-lincheck (Porcupine).
#include <cstdint>
#include <string>
#include <vector>

#include "bench/summary.h"
#include "cluster/kv_api.h"
#include "common/status.h"

namespace rdx::bench {

enum class KvKind : uint8_t {
  kGet,
  kSet,
  kIncr,  // FAA: add `by`, answer the new value
  kCas,   // compare-and-set: write `value` if the key holds `expect`
};

// One operation as a client coroutine saw it. Times are CLOCK_REALTIME nanoseconds (one clock for all threads).
struct KvOp {
  uint32_t client = 0;  // thread * outstanding + coroutine
  uint64_t key = 0;
  KvKind kind = KvKind::kGet;
  bool known = true;   // false: a write whose outcome is unknown (it failed after it was sent)
  bool found = false;  // a GET: the key existed
  std::string value;   // written (set, cas), or read (get)
  std::string expect;  // cas
  int64_t by = 0;      // incr
  int64_t number = 0;  // incr: the new value
  bool flag = false;   // cas: it wrote
  int64_t start = 0, end = 0;
};

int64_t wall_ns();

// Writes the operations of every thread as one history file.
Status write_kv_history(const std::string& path, const std::vector<std::vector<KvOp>>& per_thread);

// Runs rdx-lincheck (`lincheck`: a path; empty: next to this executable, then PATH) on `history`, with a failure's
// visualization at `history`.html; fills the summary's checker. Returns 0 linearizable, 3 not (or undecided), 2
// when the checker could not run.
int check_kv_history(const std::string& history, const std::string& lincheck, bool sequential_reads, Summary& sum);

}  // namespace rdx::bench
