#include "bench/kv_history.h"

#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/keygen.h"

namespace rdx::bench {

int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status write_kv_history(const std::string& path, const std::vector<std::vector<KvOp>>& per_thread) {
  std::ofstream f(path);
  f << "{\"rdx_kv_history\":1}\n";
  for (const auto& ops : per_thread) {
    for (const KvOp& op : ops) {
      // Keys are "key:<n>" and values lowercase letters or digits: nothing to escape; dump() keeps it honest.
      static constexpr const char* kNames[] = {"get", "set", "incr", "cas"};
      nlohmann::json j = {{"client", op.client},
                          {"key", KeyChooser::key_name(op.key)},
                          {"op", kNames[static_cast<int>(op.kind)]},
                          {"start", op.start}};
      if (op.kind == KvKind::kSet || op.kind == KvKind::kCas) j["in"] = op.value;
      if (op.kind == KvKind::kCas) j["expect"] = op.expect;
      if (op.kind == KvKind::kIncr) j["by"] = op.by;
      if (op.known) {
        j["end"] = op.end;
        if (op.kind == KvKind::kGet) j["out"] = op.found ? nlohmann::json(op.value) : nlohmann::json(nullptr);
        if (op.kind == KvKind::kIncr) j["out"] = op.number;
        if (op.kind == KvKind::kCas) j["out"] = op.flag;
      }
      f << j.dump() << '\n';
    }
  }
  f.close();
  if (!f) return error(Code::kInternal, "cannot write the history to {}", path);
  return Status::ok();
}

namespace {

std::string find_lincheck(const std::string& given) {
  if (!given.empty()) return given;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto next_to = self.parent_path() / "rdx-lincheck";
    if (::access(next_to.c_str(), X_OK) == 0) return next_to;
  }
  return "rdx-lincheck";  // PATH
}

}  // namespace

int check_kv_history(const std::string& history, const std::string& lincheck, bool sequential_reads, Summary& sum) {
  const std::string bin = find_lincheck(lincheck), html = history + ".html";
  // Arguments are paths this process chose or was given; quoted for the shell.
  auto quote = [](const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  const std::string cmd =
      quote(bin) + (sequential_reads ? " --reads sequential" : "") + " --html " + quote(html) + " " + quote(history);
  // What the summary names: the model checked (rdx-lincheck's words).
  const char* model = sequential_reads ? "sequential-reads" : "linearizability";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  if (p != nullptr) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  }
  const int status = p != nullptr ? ::pclose(p) : -1;
  const int code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto report = nlohmann::json::parse(out, nullptr, false);
  if ((code != 0 && code != 1 && code != 3) || report.is_discarded()) {
    spdlog::error(
        "rdx-bench: the linearizability checker did not run ({} exited {}); build it with "
        "`cd engine/tools/lincheck && go build -o <dir of rdx-bench>/rdx-lincheck .` or pass --lincheck",
        bin, code);
    sum.checker = Summary::Checker{model, false, 0, 0, "the checker (rdx-lincheck) did not run"};
    return 2;
  }
  const auto illegal = report.value("illegal", nlohmann::json::array());
  const auto undecided = report.value("undecided", nlohmann::json::array());
  const uint64_t ops = report.value("operations", uint64_t{0});
  std::string first;
  if (!illegal.empty())
    first = fmt::format("{} of {} keys not {} (first {}); visualization {}", illegal.size(), report.value("keys", 0),
                        sequential_reads ? "sequentially consistent" : "linearizable",
                        illegal.front().get<std::string>(), html);
  else if (!undecided.empty())
    first = fmt::format("{} keys undecided within the checker's time limit", undecided.size());
  fmt::print("{}: {} operations on {} keys ({} of unknown outcome): {}\n", model, ops, report.value("keys", 0),
             report.value("unknown_outcome", 0),
             code != 0          ? first
             : sequential_reads ? "writes linearizable, reads sequentially consistent per session"
                                : "linearizable");
  sum.checker = Summary::Checker{model, code == 0, ops, illegal.size() + undecided.size(), first};
  if (code != 0) spdlog::error("{}: {}", model, first);
  return code == 0 ? 0 : 3;
}

}  // namespace rdx::bench
