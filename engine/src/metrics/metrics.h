#pragma once
// Prometheus text exposition (format 0.0.4). Collectors are functions that write current values at scrape time;
// components publish snapshots they own, so scraping never races with worker threads.
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/histogram.h"

namespace rdx::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Writer {
 public:
  void counter(const std::string& name, const std::string& help, double value, const Labels& labels = {});
  void gauge(const std::string& name, const std::string& help, double value, const Labels& labels = {});
  // A latency histogram recorded in nanoseconds, exposed in seconds with fixed buckets from 1 us to 10 s.
  void histogram_ns(const std::string& name, const std::string& help, const Histogram& h, const Labels& labels = {});
  std::string take() { return std::move(out_); }

 private:
  void header(const std::string& name, const std::string& help, const char* type);
  void sample(const std::string& name, const Labels& labels, double value, const char* extra_label = nullptr,
              const std::string& extra_value = {});
  std::string out_;
  std::set<std::string> described_;
};

class Registry {
 public:
  using Collector = std::function<void(Writer&)>;
  void add(Collector c);
  std::string render() const;

 private:
  mutable std::mutex mu_;
  std::vector<Collector> collectors_;
};

// Label values must escape backslash, quote and newline.
std::string escape_label(const std::string& v);

}  // namespace rdx::metrics
