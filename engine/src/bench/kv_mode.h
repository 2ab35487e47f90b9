#pragma once
// rdx-bench's kv mode: YCSB-style single-key operations from this process over the native client library.
// Sessions (threads x outstanding coroutines) each issue one operation at a time, back to back, or paced to a
// total target rate (--rate: the seed's latency-versus-load measurement); throughput and latency count completed
// operations, failed ones are reported as errors. Optional read-back of every acknowledged write (no acknowledged
// write may be lost) and a recorded history checked for linearizability (bench/kv_history.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/kv_history.h"
#include "bench/summary.h"

namespace rdx::bench {

struct KvOptions {
  std::string config;
  uint16_t threads = 2;
  uint32_t outstanding = 16;
  double duration_s = 10;
  double warmup_s = 1;
  double give_up_after_s = 30;  // stop the run once no operation completed for this long (0: never)
  uint64_t keys = 100000;
  uint32_t value_size = 32;
  double read_ratio = 0.5;
  std::string dist = "uniform";
  double theta = 0.99;
  bool load = false;
  bool no_run = false;  // load only
  bool verify_acked = false;
  std::string save_acked;   // write every acknowledged write (key, version, value hash) here
  std::string verify_from;  // only verify: read back every write saved in this file
  std::string json_path;
  uint64_t seed = 42;
  double connect_timeout_s = 30;
  double progress_interval_s = 0;
  bool read_any = false;  // reads go to every replica of the key's shard in turn (--read-from any)
  std::string history;    // record the load and the run here (rdx-lincheck's format) and check it
  std::string lincheck;   // the checker binary (default: next to rdx-bench, then PATH)
  // Check reads as sequentially consistent per session (true) or linearizable (false); unset (the default): what the
  // topology's replication protocol promises (its registry line: zab's reads are sequential).
  std::optional<bool> sequential_reads;
  bool write_any = false;  // writes go to every member of the key's shard in turn (--write-to any)
  double rate = 0;         // target operations per second over all sessions (0: each session back to back)
  // The kinds a write is drawn from, uniformly (--write-mix; set, incr, cas). With incr, values are decimal
  // integers (so an INCR applies to any value), not --value-size letters.
  std::vector<KvKind> write_mix = {KvKind::kSet};
  bool numeric_values() const;
};

// Why --read-from any is refused when reads are checked per session (--reads sequential, or a protocol whose
// registry line says its reads are sequential): each node's copy lags on its own, so a session that reads from
// every node in turn does not get sequential consistency.
inline constexpr const char* kSequentialReadsNeedOneNode =
    "reads checked as sequentially consistent per session (--reads sequential, or the replication protocol's "
    "registry line: zab) need the session's reads at one node: --read-from primary, not any";

// Runs the load, the run and the checks `o` asks for; fills `summary` as it goes (the caller writes it) and returns
// the exit code (engine/docs/rdx-bench.md).
int run_kv(const KvOptions& o, Summary& summary);

}  // namespace rdx::bench
