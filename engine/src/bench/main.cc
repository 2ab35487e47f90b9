// rdx-bench: the native load generator.
//  --workload kv (default): YCSB-style single-key operations from this process over the native client library
//    (bench/kv_mode.h).
//  --workload smallbank|tatp|ogp|ycsb-a|... : transactions run inside the cluster's workers (bench/txn_mode.h),
//    with history recording and the strict-serializability checker.
// Both modes can write a compact verdict at exit (--summary, bench/summary.h) and progress lines while they work
// (--progress-interval, bench/progress.h); engine/docs/rdx-bench.md describes the flags and formats.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <string>

#include "bench/kv_mode.h"
#include "bench/summary.h"
#include "bench/txn_mode.h"

namespace {

// The value of `--name VALUE` or `--name=VALUE` in argv (the last one), for a summary of a command line CLI11 refused.
std::string raw_flag(int argc, char** argv, const std::string& name) {
  std::string v;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == name && i + 1 < argc) v = argv[++i];
    if (a.rfind(name + "=", 0) == 0) v = a.substr(name.size() + 1);
  }
  return v;
}

// A command line that parses but asks for something contradictory or out of range; empty if fine.
std::string refused(const rdx::bench::KvOptions& o, const rdx::bench::TxnOptions& t, const std::string& workload,
                    bool ledger_base) {
  const bool kv = workload == "kv";
  if (o.progress_interval_s != 0 && !(o.progress_interval_s >= 0.2 && o.progress_interval_s <= 60))
    return fmt::format("--progress-interval must be 0 (off) or 0.2..60 seconds, not {}", o.progress_interval_s);
  if (o.no_run && !o.load) return "--no-run loads only: it needs --load";
  if (ledger_base && kv) return "--ledger-base is for transactional workloads (SmallBank's ledger), not --workload kv";
  if (ledger_base && o.load)
    return "--ledger-base counts what earlier runs committed since another invocation loaded the data; with --load "
           "the balances start afresh (leave it out)";
  if (o.no_run && !t.history_path.empty()) return "--history records a run, and --no-run has none";
  if (kv && !t.history_path.empty() && !o.load)
    return "--workload kv --history needs --load: the history must hold every write of its keys (values written "
           "before this invocation would read as never written)";
  if (kv && !t.history_path.empty() && o.verify_acked)
    return "--history checks linearizability of the run itself; leave out --verify-acked (its reads are not recorded)";
  const bool mixed = o.write_mix.size() != 1 || o.write_mix[0] != rdx::bench::KvKind::kSet;
  if (!kv && (o.read_any || o.write_any || !o.lincheck.empty() || o.rate > 0 || mixed))
    return "--read-from, --write-to, --write-mix, --lincheck and --rate apply to --workload kv (transactions run "
           "inside the cluster)";
  if (o.sequential_reads.has_value() && (!kv || t.history_path.empty()))
    return "--reads says how --workload kv --history checks its reads: it needs both";
  if (o.sequential_reads.value_or(false) && o.read_any) return rdx::bench::kSequentialReadsNeedOneNode;
  if (o.no_run && !o.verify_from.empty()) return "--verify-from reads back saved writes: it neither loads nor runs";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  rdx::bench::capture_first_error();  // the summary's "error"
  rdx::bench::KvOptions o;
  rdx::bench::TxnOptions t;
  std::string workload = "kv", summary_path;
  int64_t ledger_base = 0;
  CLI::App app{"rdx-bench: load generator for rdx clusters"};
  app.add_option("--config", o.config, "topology file of the target cluster")->required();
  app.add_option("--workload", workload,
                 "kv (single-key YCSB from this process) or a transactional workload run inside the cluster: "
                 "smallbank, tatp, ogp (o(G,P)), ycsb-a|b|c|f, with parameters as name:key=value,...");
  app.add_option("--coroutines", t.coroutines, "transactional: concurrent transactions per worker")
      ->check(CLI::Range(1, 4096));
  app.add_option("--nodes", t.nodes, "transactional: coordinating nodes (default: every data node)")->delimiter(',');
  app.add_option("--history", t.history_path,
                 "record the history here and check it (transactional: strict serializability, in process; kv: "
                 "linearizability per key with rdx-lincheck, needs --load)");
  std::string read_from = "primary";
  app.add_option("--read-from", read_from, "kv: GETs go to the key's primary, or to every replica in turn (any)")
      ->check(CLI::IsMember({"primary", "any"}));
  std::string write_to = "primary";
  app.add_option("--write-to", write_to,
                 "kv: PUTs go to the key's primary, or to every member in turn (any; what a member does with a write "
                 "is the replication protocol's)")
      ->check(CLI::IsMember({"primary", "any"}));
  std::vector<std::string> write_mix = {"set"};
  app.add_option("--write-mix", write_mix,
                 "kv: the kinds of writes, drawn uniformly: set, incr (FAA), cas (compare-and-set expecting the value "
                 "this thread last saw); with incr, values are decimal integers")
      ->delimiter(',')
      ->check(CLI::IsMember({"set", "incr", "cas"}));
  app.add_option("--lincheck", o.lincheck, "kv --history: the rdx-lincheck binary (default: next to rdx-bench, PATH)");
  std::string reads;
  app.add_option("--reads", reads,
                 "kv --history: what reads are checked for: linearizable, or sequential (consistent per session); "
                 "default: what the topology's replication protocol promises (rdxd --list: zab's are sequential)")
      ->check(CLI::IsMember({"linearizable", "sequential"}));
  app.add_option("--load-keys-per-txn", t.load_keys_per_txn,
                 "transactional: load in transactions of this many keys, recorded in the history (0: single-key)");
  app.add_option("--local-backup-reads", t.local_backup_reads, "transactional: on|off|topology")
      ->check(CLI::IsMember({"on", "off", "topology"}));
  app.add_option("--ht-batching", t.ht_batching, "transactional: on|off|topology")
      ->check(CLI::IsMember({"on", "off", "topology"}));
  app.add_flag("--validation-off", t.validation_off,
               "TEST ONLY: skip read validation (a planted anomaly the checker must report)");
  CLI::Option* ledger_opt = app.add_option(
      "--ledger-base", ledger_base,
      "transactional: cents committed to the balances by earlier runs since another invocation loaded the data (the "
      "sum of their summaries' ledger); the invariant check then covers this run too");
  app.add_option("--threads", o.threads, "client threads")->check(CLI::Range(1, 256));
  app.add_option("--outstanding", o.outstanding, "operations in flight per thread")->check(CLI::Range(1, 4096));
  app.add_option("--rate", o.rate,
                 "kv: pace the sessions (threads x outstanding) to this many operations per second in all "
                 "(0: back to back)")
      ->check(CLI::Range(0.0, 1e9));
  app.add_option("--duration", o.duration_s, "measured seconds")->check(CLI::Range(0.1, 86400.0));
  app.add_option("--warmup", o.warmup_s, "seconds before measuring")->check(CLI::Range(0.0, 3600.0));
  app.add_option("--give-up-after", o.give_up_after_s,
                 "kv: stop the run (exit 1) once no operation completed for this many seconds (0: run to the end)")
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--keys", o.keys, "key count")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 34));
  app.add_option("--value-size", o.value_size, "value bytes")->check(CLI::Range(1, 60000));
  app.add_option("--read-ratio", o.read_ratio, "fraction of reads")->check(CLI::Range(0.0, 1.0));
  app.add_option("--dist", o.dist, "key distribution")->check(CLI::IsMember({"uniform", "zipfian"}));
  app.add_option("--theta", o.theta, "zipfian skew")->check(CLI::Range(0.01, 0.999));
  app.add_flag("--load", o.load, "write every key once before the run");
  app.add_flag("--no-run", o.no_run, "load only (with --load): no run");
  app.add_flag("--verify-acked", o.verify_acked, "after the run, read back every acknowledged write");
  app.add_option("--save-acked", o.save_acked,
                 "write every acknowledged write to this file (for a later --verify-from)");
  app.add_option("--verify-from", o.verify_from, "do not load or run: read back every write saved by --save-acked");
  app.add_option("--json", o.json_path, "write results as JSON to this file");
  app.add_option("--summary", summary_path,
                 "at exit, write a compact JSON verdict here (< 3500 bytes, e.g. /dev/termination-log)");
  app.add_option("--progress-interval", o.progress_interval_s,
                 "print a progress line to stdout every this many seconds (0.2..60; 0: off)");
  app.add_option("--seed", o.seed, "random seed");
  app.add_option("--connect-timeout", o.connect_timeout_s, "seconds to wait for the cluster");

  rdx::bench::Summary sum;
  const auto finish = [&](int rc) {
    sum.exit_code = rc;
    if (rc != 0 && sum.error.empty()) sum.error = rdx::bench::first_logged_error();
    if (!summary_path.empty()) rdx::bench::write_summary(summary_path, sum);
    return rc;
  };
  const auto describe = [&](const std::string& wl) {
    sum.workload = wl;
    sum.mode = wl == "kv" ? "kv" : "txn";
    sum.unit = wl == "kv" ? "ops/s" : "tx/s";
    if (wl != "kv") sum.invariant = rdx::bench::Summary::Invariant{false, true, "not checked: nothing ran"};
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    if (rc == 0) return 0;  // --help
    summary_path = raw_flag(argc, argv, "--summary");
    std::string wl = raw_flag(argc, argv, "--workload");
    describe(wl.empty() ? "kv" : wl);
    sum.error = e.what();
    return finish(rc);
  }
  spdlog::set_pattern("%H:%M:%S.%e %^%l%$ %v");
  describe(workload);
  sum.stage = o.no_run ? "load" : "run";
  o.read_any = read_from == "any";
  if (!reads.empty()) o.sequential_reads = reads == "sequential";
  o.write_any = write_to == "any";
  o.write_mix.clear();
  for (const std::string& k : write_mix)
    o.write_mix.push_back(k == "incr"  ? rdx::bench::KvKind::kIncr
                          : k == "cas" ? rdx::bench::KvKind::kCas
                                       : rdx::bench::KvKind::kSet);
  if (workload == "kv") o.history = t.history_path;
  if (std::string why = refused(o, t, workload, ledger_opt->count() > 0); !why.empty()) {
    spdlog::error("rdx-bench: {}", why);
    return finish(2);
  }
  if (workload == "kv") return finish(rdx::bench::run_kv(o, sum));
  t.config = o.config;
  t.workload = workload;
  t.duration_s = o.duration_s;
  t.load = o.load;
  t.no_run = o.no_run;
  if (ledger_opt->count() > 0) t.ledger_base = ledger_base;
  t.progress_interval_s = o.progress_interval_s;
  t.json_path = o.json_path;
  t.seed = o.seed;
  t.connect_timeout_s = o.connect_timeout_s;
  return finish(rdx::bench::run_txn(t, sum));
}
