#pragma once
// Key choosers for YCSB-style workloads: uniform, and Zipfian (Gray et al., as in YCSB) with the hot keys scattered
// over the key space by hashing, so hot keys do not all land on one shard.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "common/hash.h"

namespace rdx::bench {

class ZipfGenerator {
 public:
  ZipfGenerator(uint64_t n, double theta) : n_(n), theta_(theta) {
    zetan_ = zeta(n, theta);
    double zeta2 = zeta(2, theta);
    alpha_ = 1.0 / (1.0 - theta);
    eta_ = (1 - std::pow(2.0 / static_cast<double>(n), 1 - theta)) / (1 - zeta2 / zetan_);
  }
  template <typename Rng>
  uint64_t next(Rng& rng) {
    double u = std::uniform_real_distribution<double>(0, 1)(rng);
    double uz = u * zetan_;
    if (uz < 1.0) return 0;
    if (uz < 1.0 + std::pow(0.5, theta_)) return 1;
    return static_cast<uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1, alpha_)) % n_;
  }

 private:
  static double zeta(uint64_t n, double theta) {
    double s = 0;
    for (uint64_t i = 1; i <= n; ++i) s += 1.0 / std::pow(static_cast<double>(i), theta);
    return s;
  }
  uint64_t n_;
  double theta_, zetan_, alpha_, eta_;
};

class KeyChooser {
 public:
  KeyChooser(uint64_t keys, bool zipfian, double theta)
      : keys_(keys), zipf_(zipfian ? keys : 2, theta), zipfian_(zipfian) {}
  template <typename Rng>
  uint64_t next(Rng& rng) {
    if (!zipfian_) return std::uniform_int_distribution<uint64_t>(0, keys_ - 1)(rng);
    return hash_bytes(nullptr, 0, zipf_.next(rng) + 1) % keys_;  // scatter the rank over the key space
  }
  static std::string key_name(uint64_t i) { return fmt::format("user{:012}", i); }

 private:
  uint64_t keys_;
  ZipfGenerator zipf_;
  bool zipfian_;
};

}  // namespace rdx::bench
