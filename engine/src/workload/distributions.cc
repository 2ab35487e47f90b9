#include "workload/distributions.h"

#include <cmath>
#include <numeric>

namespace rdx::workload {

namespace {
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

Rng::Rng(uint64_t seed) {
  for (auto& s : s_) s = splitmix64(seed);
}

uint64_t Rng::below(uint64_t n) {
  // Lemire's multiply-shift with rejection: unbiased without a division in the common case.
  uint64_t x = (*this)();
  __uint128_t m = static_cast<__uint128_t>(x) * n;
  auto low = static_cast<uint64_t>(m);
  if (low < n) {
    uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      x = (*this)();
      m = static_cast<__uint128_t>(x) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

uint64_t Rng::between(uint64_t lo, uint64_t hi) {
  if (hi - lo == std::numeric_limits<uint64_t>::max()) return (*this)();
  return lo + below(hi - lo + 1);
}

KeyChooser KeyChooser::uniform(uint64_t n) { return {Kind::kUniform, n}; }

KeyChooser KeyChooser::zipfian(uint64_t n, double theta) {
  KeyChooser c(Kind::kZipfian, n);
  c.theta_ = theta;
  double zeta = 0;
  for (uint64_t i = 1; i <= n; ++i) zeta += 1.0 / std::pow(static_cast<double>(i), theta);
  c.zetan_ = zeta;
  double zeta2 = n >= 2 ? 1.0 + std::pow(0.5, theta) : 1.0;
  c.alpha_ = 1.0 / (1.0 - theta);
  c.eta_ = n >= 2 ? (1 - std::pow(2.0 / static_cast<double>(n), 1 - theta)) / (1 - zeta2 / zeta) : 0;
  c.half_pow_theta_ = std::pow(0.5, theta);
  // A stride near n * golden ratio, coprime with n: consecutive ranks land far apart.
  uint64_t stride = n > 2 ? static_cast<uint64_t>(static_cast<double>(n) * 0.6180339887) | 1 : 1;
  while (std::gcd(stride, n) != 1) stride += 2;
  c.stride_ = stride % std::max<uint64_t>(n, 1);
  if (c.stride_ == 0) c.stride_ = 1;
  return c;
}

KeyChooser KeyChooser::hotspot(uint64_t n, uint64_t hot, double hot_probability) {
  KeyChooser c(Kind::kHotspot, n);
  c.hot_ = hot;
  c.hot_probability_ = hot_probability;
  return c;
}

KeyChooser KeyChooser::nurand(uint64_t n, uint64_t a) {
  KeyChooser c(Kind::kNuRand, n);
  c.a_ = a;
  return c;
}

uint64_t KeyChooser::zipf_rank(Rng& rng) const {
  double u = rng.unit();
  double uz = u * zetan_;
  if (uz < 1.0) return 0;
  if (uz < 1.0 + half_pow_theta_) return 1;
  auto r = static_cast<uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1, alpha_));
  return r < n_ ? r : n_ - 1;
}

uint64_t KeyChooser::next(Rng& rng) const {
  switch (kind_) {
    case Kind::kUniform:
      return rng.below(n_);
    case Kind::kZipfian:
      return static_cast<uint64_t>((static_cast<__uint128_t>(zipf_rank(rng)) * stride_) % n_);
    case Kind::kHotspot:
      if (hot_ == 0 || hot_ >= n_) return rng.below(n_);
      if (rng.chance(hot_probability_)) return rng.below(hot_);
      return hot_ + rng.below(n_ - hot_);
    case Kind::kNuRand:
      return (rng.between(0, a_) | rng.below(n_)) % n_;
  }
  return 0;
}

}  // namespace rdx::workload
