// rdx-check: verifies that a recorded history (rdx-history JSON lines, see history_io.h) is strictly serializable.
// Exit status: 0 no violation, 1 violations found, 2 bad input (unreadable or malformed file, bad options).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include "checker/checker.h"
#include "checker/history_io.h"

namespace {

nlohmann::json txn_json(const rdx::checker::TxnRef& t) { return {{"id", t.id}, {"type", t.type}}; }

nlohmann::json report_json(const rdx::checker::CheckReport& r) {
  using namespace rdx::checker;
  nlohmann::json counts = nlohmann::json::object();
  for (size_t i = 0; i < kAnomalyKinds; ++i) {
    if (r.counts[i] > 0) counts[anomaly_name(static_cast<Anomaly>(i))] = r.counts[i];
  }
  nlohmann::json violations = nlohmann::json::array();
  for (const auto& v : r.violations) {
    nlohmann::json txns = nlohmann::json::array(), cycle = nlohmann::json::array();
    for (const auto& t : v.txns) txns.push_back(txn_json(t));
    for (const auto& s : v.cycle) {
      nlohmann::json step = {{"from", txn_json(s.from)}, {"to", txn_json(s.to)}, {"edge", edge_name(s.kind)}};
      if (s.kind == EdgeKind::kRT) {
        step["from_end_ns"] = s.from_end_ns;
        step["to_start_ns"] = s.to_start_ns;
      } else {
        step["key"] = s.key;
        step["from_version"] = s.from_version;
        step["to_version"] = s.to_version;
      }
      cycle.push_back(std::move(step));
    }
    violations.push_back({{"kind", anomaly_name(v.kind)}, {"message", v.message}, {"txns", txns}, {"cycle", cycle}});
  }
  const auto& s = r.stats;
  return {{"ok", r.ok()},
          {"total", r.total()},
          {"counts", counts},
          {"violations", violations},
          {"stats",
           {{"committed", s.committed},
            {"aborted", s.aborted},
            {"load", s.load},
            {"unknown", s.unknown},
            {"unknown_committed", s.unknown_committed},
            {"keys", s.keys},
            {"versions", s.versions},
            {"reads", s.reads},
            {"edges", s.edges},
            {"unresolved_absent_reads", s.unresolved_absent_reads},
            {"index_ms", s.index_ms},
            {"graph_ms", s.graph_ms},
            {"cycles_ms", s.cycles_ms},
            {"cpu_ms", s.cpu_ms}}}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rdx-check: strict-serializability checker for rdx transaction histories"};
  std::string path;
  bool json = false, no_infer = false, no_real_time = false;
  rdx::checker::CheckOptions opt;
  app.add_option("history", path, "history file (rdx-history JSON lines), - for stdin")->required();
  app.add_option("--load-type", opt.load_type, "type of the load phase's records (their writes are the initial state)")
      ->capture_default_str();
  app.add_flag("--no-infer-initial", no_infer,
               "do not treat unrecorded versions below a key's first write as its initial state");
  app.add_option("--rt-slack-ns", opt.rt_slack_ns, "clock skew tolerated between coordinators (ns)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--no-real-time", no_real_time, "check serializability only (no real-time order)");
  app.add_option("--max-examples", opt.max_examples, "violations printed per kind (all are counted)")
      ->capture_default_str();
  app.add_flag("--json", json, "print the report as JSON");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  opt.infer_initial = !no_infer;
  opt.check_real_time = !no_real_time;

  auto t0 = std::chrono::steady_clock::now();
  const std::clock_t cpu0 = std::clock();
  auto history = path == "-" ? rdx::checker::read_history(std::cin, "<stdin>") : rdx::checker::read_history_file(path);
  if (!history.is_ok()) {
    std::fprintf(stderr, "rdx-check: %s\n", history.status().message().c_str());
    return 2;
  }
  double read_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  double read_cpu_ms = 1000.0 * static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  auto report = rdx::checker::check_history(*history, opt);
  if (!report.is_ok()) {
    std::fprintf(stderr, "rdx-check: %s: %s\n", path.c_str(), report.status().message().c_str());
    return 2;
  }
  if (json) {
    auto j = report_json(*report);
    j["stats"]["read_ms"] = read_ms;
    j["stats"]["read_cpu_ms"] = read_cpu_ms;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s", rdx::checker::format_report(*report).c_str());
    std::printf("read: %zu records in %.0f ms (wall); %.0f ms cpu\n", history->size(), read_ms, read_cpu_ms);
  }
  return report->ok() ? 0 : 1;
}
