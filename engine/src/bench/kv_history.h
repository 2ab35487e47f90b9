#pragma once
// rdx-bench --workload kv --history: every GET and PUT of the load and the run, in rdx-lincheck's format
// (engine/tools/lincheck/README.md), checked per key for linearizability by rdx-lincheck (Porcupine).
#include <cstdint>
#include <string>
#include <vector>

#include "bench/summary.h"
#include "cluster/kv_api.h"
#include "common/status.h"

namespace rdx::bench {

// One operation as a client coroutine saw it. Times are CLOCK_REALTIME nanoseconds (one clock for all threads).
struct KvOp {
  uint32_t client = 0;  // thread * outstanding + coroutine
  uint64_t key = 0;
  bool write = false;
  bool known = true;   // false: a PUT whose outcome is unknown (it failed after it was sent)
  bool found = false;  // a GET: the key existed
  std::string value;   // written, or read
  int64_t start = 0, end = 0;
};

int64_t wall_ns();

// Adds `op` (started at op.start) to `history` once its result `r` is known. A PUT that failed before it was sent
// (Client::never_sent) changed nothing and is left out, as is any failed GET; a PUT that failed after it was sent
// has an unknown outcome.
void record_kv_op(std::vector<KvOp>& history, KvOp op, const cluster::KvResult& r, std::string value);

// Writes the operations of every thread as one history file.
Status write_kv_history(const std::string& path, const std::vector<std::vector<KvOp>>& per_thread);

// Runs rdx-lincheck (`lincheck`: a path; empty: next to this executable, then PATH) on `history`, with a failure's
// visualization at `history`.html; fills the summary's checker. Returns 0 linearizable, 3 not (or undecided), 2
// when the checker could not run.
int check_kv_history(const std::string& history, const std::string& lincheck, Summary& sum);

}  // namespace rdx::bench
