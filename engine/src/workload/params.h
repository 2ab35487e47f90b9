#pragma once
// Reads a workload's key=value parameters with defaults and ranges. A workload constructor asks for each parameter
// it knows; finish() then reports the first bad value or any parameter nobody asked for (a typo must not silently
// run the default). The reader also records help text and the effective values for reports.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace rdx::workload {

class ParamReader {
 public:
  ParamReader(std::string workload, std::vector<std::pair<std::string, std::string>> given);

  uint64_t u64(const char* name, uint64_t def, uint64_t min, uint64_t max, const char* help);
  double real(const char* name, double def, double min, double max, const char* help);
  bool flag(const char* name, bool def, const char* help);  // 0/1/true/false
  std::string choice(const char* name, const char* def, const std::vector<std::string>& allowed, const char* help);
  // Comma-free list "a/b/c" of `count` non-negative integers (percentages of a mix), at least one non-zero.
  std::vector<uint64_t> weights(const char* name, const std::vector<uint64_t>& def, const char* help);

  // A constraint between parameters failed (only the first error is kept).
  void fail(std::string message);
  // The first error, or an unknown parameter, or ok.
  Status finish() const;

  const std::vector<std::pair<std::string, std::string>>& effective() const { return effective_; }
  // "  name=default  help" lines.
  const std::string& help() const { return help_; }

 private:
  // The given value for `name` (marking it used), or nullptr.
  const std::string* take(const char* name);
  void note(const char* name, const std::string& def, const std::string& value, const char* help);

  std::string workload_;
  std::vector<std::pair<std::string, std::string>> given_;
  std::vector<bool> used_;
  std::vector<std::pair<std::string, std::string>> effective_;
  std::string help_;
  std::string error_;
};

}  // namespace rdx::workload
