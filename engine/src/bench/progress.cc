#include "bench/progress.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>

namespace rdx::bench {

using Clock = std::chrono::steady_clock;

void Progress::begin(std::string stage, double total_s, std::function<uint64_t()> ops) {
  end();
  if (!on()) return;
  stop_ = false;
  thread_ = std::thread([this, stage = std::move(stage), total_s, ops = std::move(ops)]() mutable {
    loop(std::move(stage), total_s, std::move(ops));
  });
}

void Progress::end() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Progress::loop(std::string stage, double total_s, std::function<uint64_t()> ops) {
  const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval_s_));
  const auto t0 = Clock::now();
  const uint64_t base = ops();
  uint64_t last_ops = 0;
  auto last_t = t0, next = t0 + interval;
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    if (cv_.wait_until(lk, next, [this] { return stop_; })) return;
    const auto now = Clock::now();
    const uint64_t v = ops();
    const uint64_t cur = v >= base ? v - base : 0;
    const double dt = std::chrono::duration<double>(now - last_t).count();
    const double rate = dt > 0 && cur >= last_ops ? static_cast<double>(cur - last_ops) / dt : 0;
    // One write per line (stdio locks the stream per call), so lines from other threads never split it.
    fmt::print(stdout,
               "rdx-bench progress {{\"stage\":\"{}\",\"elapsed_s\":{:.3f},\"total_s\":{:.3f},\"ops\":{},"
               "\"ops_per_s\":{:.1f}}}\n",
               stage, std::chrono::duration<double>(now - t0).count(), total_s, cur, rate);
    std::fflush(stdout);
    last_ops = cur;
    last_t = now;
    next += interval;
    if (next <= now) next = now + interval;
  }
}

}  // namespace rdx::bench
