#pragma once
// Progress lines for orchestrators (--progress-interval): while a stage runs, every interval one line on stdout,
// flushed at once:
//   rdx-bench progress {"stage":"running","elapsed_s":1.000,"total_s":10.000,"ops":1234,"ops_per_s":1234.0}
// elapsed_s and total_s are the current stage's (total_s 0 when unknown), ops counts from the stage's start and
// ops_per_s is the rate over the last interval. The format is in engine/docs/rdx-bench.md.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace rdx::bench {

class Progress {
 public:
  explicit Progress(double interval_s) : interval_s_(interval_s) {}
  ~Progress() { end(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool on() const { return interval_s_ > 0; }
  // Ends the current stage, if any, and reports `stage` from now on; `ops` (called from the reporting thread) is
  // a running count, reported relative to its value now.
  void begin(std::string stage, double total_s, std::function<uint64_t()> ops);
  void end();

 private:
  void loop(std::string stage, double total_s, std::function<uint64_t()> ops);

  double interval_s_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

}  // namespace rdx::bench
