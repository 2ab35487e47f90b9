#include "metrics/metrics.h"

#include <fmt/format.h>

namespace rdx::metrics {

std::string escape_label(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void Writer::header(const std::string& name, const std::string& help, const char* type) {
  if (!described_.insert(name).second) return;
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void Writer::sample(const std::string& name, const Labels& labels, double value, const char* extra_label,
                    const std::string& extra_value) {
  out_ += name;
  if (!labels.empty() || extra_label != nullptr) {
    out_ += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      out_ += fmt::format("{}{}=\"{}\"", first ? "" : ",", k, escape_label(v));
      first = false;
    }
    if (extra_label != nullptr) out_ += fmt::format("{}{}=\"{}\"", first ? "" : ",", extra_label, extra_value);
    out_ += '}';
  }
  out_ += fmt::format(" {}\n", value);
}

void Writer::counter(const std::string& name, const std::string& help, double value, const Labels& labels) {
  header(name, help, "counter");
  sample(name, labels, value);
}

void Writer::gauge(const std::string& name, const std::string& help, double value, const Labels& labels) {
  header(name, help, "gauge");
  sample(name, labels, value);
}

void Writer::histogram_ns(const std::string& name, const std::string& help, const Histogram& h, const Labels& labels) {
  static constexpr double kBoundsSec[] = {1e-6, 5e-6,   1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3,
                                          1e-2, 2.5e-2, 5e-2, 0.1,    0.25, 0.5,  1,      2.5,  5,    10};
  header(name, help, "histogram");
  // Cumulative counts per bound: sum the fine-grained buckets whose upper bound is within it.
  uint64_t cum = 0;
  int i = 0;
  for (double b : kBoundsSec) {
    auto bound_ns = static_cast<uint64_t>(b * 1e9);
    for (; i < Histogram::kBuckets && Histogram::upper_bound(i) <= bound_ns; ++i) cum += h.bucket_count(i);
    sample(name + "_bucket", labels, static_cast<double>(cum), "le", fmt::format("{}", b));
  }
  sample(name + "_bucket", labels, static_cast<double>(h.count()), "le", "+Inf");
  sample(name + "_sum", labels, h.mean() * static_cast<double>(h.count()) / 1e9);
  sample(name + "_count", labels, static_cast<double>(h.count()));
}

void Registry::add(Collector c) {
  std::lock_guard<std::mutex> lk(mu_);
  collectors_.push_back(std::move(c));
}

std::string Registry::render() const {
  std::lock_guard<std::mutex> lk(mu_);
  Writer w;
  for (const auto& c : collectors_) c(w);
  return w.take();
}

}  // namespace rdx::metrics
