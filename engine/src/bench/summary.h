#pragma once
// rdx-bench's machine-readable verdict for orchestrators (the Kubernetes Benchmark controller): one compact JSON
// object written at exit by --summary (e.g. to /dev/termination-log, whose limit is 4096 bytes), and the first error
// the process logged, which becomes the summary's "error". The schema is in engine/docs/rdx-bench.md.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace rdx::bench {

struct Summary {
  static constexpr int kVersion = 1;
  static constexpr size_t kMaxText = 400;    // free-text fields are cut to this many bytes
  static constexpr size_t kMaxBytes = 3500;  // the whole object stays under this

  int exit_code = 0;
  std::string error;          // written only when exit_code != 0 (default: the first error logged)
  std::string mode;           // "txn" | "kv"
  std::string workload;       // the --workload text
  std::string stage = "run";  // the last stage this invocation did: "load" | "run"
  double duration_s = 0;      // measured seconds of the run (0 when it only loaded)
  double throughput = 0;      // committed tx/s (txn) or completed ops/s (kv)
  std::string unit;           // "tx/s" | "ops/s"
  double p50_us = 0, p99_us = 0, p999_us = 0;
  uint64_t committed = 0, aborted = 0, errors = 0;
  double abort_rate = 0;
  uint64_t emulated_onesided_ops = 0;
  struct Load {
    uint64_t records = 0;
    double seconds = 0;
  };
  std::optional<Load> load;  // only when this invocation loaded
  int64_t ledger = 0;        // txn: this run's committed balance delta (SmallBank)
  // txn: the negative and positive deltas of this run's transactions whose outcome is unknown (the commit could not
  // learn it): each may or may not have applied. Not part of `ledger` (nor of --ledger-base).
  std::pair<int64_t, int64_t> ledger_unknown{0, 0};
  struct Checker {
    std::string model;  // "strict-serializability" | "acknowledged-writes" | "linearizability" | "sequential-reads"
    bool ok = true;
    uint64_t checked = 0, violations = 0;
    std::string anomaly;  // the first violation, short
  };
  std::optional<Checker> checker;
  struct Invariant {
    bool checked = false;
    bool ok = true;
    std::string summary;
  };
  std::optional<Invariant> invariant;  // txn only
};

// Adds a sink to the default logger that keeps the first message logged at error level or above. Call once, before
// any other thread logs.
void capture_first_error();
std::string first_logged_error();

// The compact JSON object (one line, no newline), under Summary::kMaxBytes.
std::string summary_json(const Summary& s);
// Writes summary_json(s) and a newline to `path` (truncating it). Logs and returns false on failure.
bool write_summary(const std::string& path, const Summary& s);

}  // namespace rdx::bench
