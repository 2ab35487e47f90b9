#include "workload/params.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace rdx::workload {

ParamReader::ParamReader(std::string workload, std::vector<std::pair<std::string, std::string>> given)
    : workload_(std::move(workload)), given_(std::move(given)), used_(given_.size(), false) {
  for (size_t i = 0; i < given_.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (given_[j].first == given_[i].first) fail(fmt::format("parameter {} is given twice", given_[i].first));
    }
  }
}

const std::string* ParamReader::take(const char* name) {
  for (size_t i = 0; i < given_.size(); ++i) {
    if (given_[i].first == name) {
      used_[i] = true;
      return &given_[i].second;
    }
  }
  return nullptr;
}

void ParamReader::note(const char* name, const std::string& def, const std::string& value, const char* help) {
  effective_.emplace_back(name, value);
  help_ += fmt::format("    {}={}  {}\n", name, def, help);
}

void ParamReader::fail(std::string message) {
  if (error_.empty()) error_ = std::move(message);
}

Status ParamReader::finish() const {
  if (!error_.empty()) return error(Code::kInvalidArgument, "workload {}: {}", workload_, error_);
  for (size_t i = 0; i < given_.size(); ++i) {
    if (!used_[i]) {
      std::string known;
      for (const auto& [k, v] : effective_) known += (known.empty() ? "" : ", ") + k;
      return error(Code::kInvalidArgument, "workload {}: unknown parameter {} (known: {})", workload_, given_[i].first,
                   known);
    }
  }
  return Status::ok();
}

uint64_t ParamReader::u64(const char* name, uint64_t def, uint64_t min, uint64_t max, const char* help) {
  uint64_t v = def;
  if (const std::string* s = take(name)) {
    auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
    if (ec != std::errc() || end != s->data() + s->size() || s->empty()) {
      fail(fmt::format("{}={} is not a non-negative integer", name, *s));
      v = def;
    } else if (v < min || v > max) {
      fail(fmt::format("{}={} is out of range [{}, {}]", name, v, min, max));
      v = def;
    }
  }
  note(name, std::to_string(def), std::to_string(v), help);
  return v;
}

double ParamReader::real(const char* name, double def, double min, double max, const char* help) {
  double v = def;
  if (const std::string* s = take(name)) {
    auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
    if (ec != std::errc() || end != s->data() + s->size() || s->empty() || !std::isfinite(v)) {
      fail(fmt::format("{}={} is not a number", name, *s));
      v = def;
    } else if (v < min || v > max) {
      fail(fmt::format("{}={} is out of range [{}, {}]", name, *s, min, max));
      v = def;
    }
  }
  note(name, fmt::format("{}", def), fmt::format("{}", v), help);
  return v;
}

bool ParamReader::flag(const char* name, bool def, const char* help) {
  bool v = def;
  if (const std::string* s = take(name)) {
    if (*s == "1" || *s == "true") {
      v = true;
    } else if (*s == "0" || *s == "false") {
      v = false;
    } else {
      fail(fmt::format("{}={} must be 0, 1, true or false", name, *s));
    }
  }
  note(name, def ? "1" : "0", v ? "1" : "0", help);
  return v;
}

std::string ParamReader::choice(const char* name, const char* def, const std::vector<std::string>& allowed,
                                const char* help) {
  std::string v = def;
  if (const std::string* s = take(name)) {
    bool ok = false;
    for (const auto& a : allowed) ok |= a == *s;
    if (ok) {
      v = *s;
    } else {
      fail(fmt::format("{}={} is not one of {}", name, *s, fmt::join(allowed, "|")));
    }
  }
  note(name, def, v, help);
  return v;
}

std::vector<uint64_t> ParamReader::weights(const char* name, const std::vector<uint64_t>& def, const char* help) {
  std::vector<uint64_t> v = def;
  if (const std::string* s = take(name)) {
    std::vector<uint64_t> parsed;
    const char* p = s->data();
    const char* end = s->data() + s->size();
    bool ok = true;
    while (ok && p <= end) {
      uint64_t x = 0;
      auto [next, ec] = std::from_chars(p, end, x);
      ok = ec == std::errc() && x <= 1'000'000 && (next == end || *next == '/');
      parsed.push_back(x);
      p = next + 1;
    }
    uint64_t sum = 0;
    for (uint64_t x : parsed) sum += x;
    if (!ok || parsed.size() != def.size() || sum == 0) {
      fail(fmt::format("{}={} must be {} weights separated by '/' (e.g. {}), not all zero", name, *s, def.size(),
                       fmt::join(def, "/")));
    } else {
      v = std::move(parsed);
    }
  }
  note(name, fmt::format("{}", fmt::join(def, "/")), fmt::format("{}", fmt::join(v, "/")), help);
  return v;
}

}  // namespace rdx::workload
