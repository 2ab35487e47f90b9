#include "bench/summary.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

namespace rdx::bench {
namespace {

std::mutex g_mu;
std::string g_first_error;

class FirstErrorSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (msg.level < spdlog::level::err) return;
    std::lock_guard<std::mutex> lk(g_mu);
    if (g_first_error.empty()) g_first_error.assign(msg.payload.data(), msg.payload.size());
  }
  void flush_() override {}
};

// At most `max` bytes, not cutting a UTF-8 sequence in two.
std::string cut(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

// JSON has no NaN or infinity.
double num(double v) { return std::isfinite(v) ? v : 0; }

std::string render(const Summary& s, size_t max_text) {
  nlohmann::ordered_json j;
  j["rdx_bench_summary"] = Summary::kVersion;
  j["ok"] = s.exit_code == 0;
  j["exit_code"] = s.exit_code;
  if (s.exit_code != 0)
    j["error"] = cut(s.error.empty() ? "exit code " + std::to_string(s.exit_code) : s.error, max_text);
  j["mode"] = s.mode;
  j["workload"] = cut(s.workload, max_text);
  j["stage"] = s.stage;
  j["duration_s"] = num(s.duration_s);
  j["throughput"] = num(s.throughput);
  j["unit"] = s.unit;
  j["latency_us"] = {{"p50", num(s.p50_us)}, {"p99", num(s.p99_us)}, {"p999", num(s.p999_us)}};
  j["committed"] = s.committed;
  j["aborted"] = s.aborted;
  j["abort_rate"] = num(s.abort_rate);
  j["errors"] = s.errors;
  j["emulated_onesided_ops"] = s.emulated_onesided_ops;
  if (s.load) j["load"] = {{"records", s.load->records}, {"seconds", num(s.load->seconds)}};
  j["ledger"] = s.ledger;
  j["ledger_unknown"] = {s.ledger_unknown.first, s.ledger_unknown.second};
  if (s.checker) {
    j["checker"] = {{"model", s.checker->model},
                    {"ok", s.checker->ok},
                    {"checked", s.checker->checked},
                    {"violations", s.checker->violations},
                    {"anomaly", cut(s.checker->anomaly, max_text)}};
  }
  if (s.invariant) {
    j["invariant"] = {
        {"checked", s.invariant->checked}, {"ok", s.invariant->ok}, {"summary", cut(s.invariant->summary, max_text)}};
  }
  // Invalid UTF-8 in a message (a key, a peer's error text) is replaced, never a reason to write nothing.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void capture_first_error() { spdlog::default_logger()->sinks().push_back(std::make_shared<FirstErrorSink>()); }

std::string first_logged_error() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_first_error;
}

std::string summary_json(const Summary& s) {
  // Escaping can make the free text longer than kMaxText (a control character takes six bytes): shorten it further
  // rather than exceed the limit.
  for (size_t max_text = Summary::kMaxText;; max_text /= 2) {
    std::string out = render(s, max_text);
    if (out.size() < Summary::kMaxBytes || max_text < 16) return out;
  }
}

bool write_summary(const std::string& path, const Summary& s) {
  std::ofstream f(path, std::ios::trunc);
  f << summary_json(s) << '\n';
  f.close();
  if (!f) {
    spdlog::warn("rdx-bench: cannot write the summary to {}", path);
    return false;
  }
  return true;
}

}  // namespace rdx::bench
