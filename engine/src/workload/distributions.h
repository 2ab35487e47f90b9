#pragma once
// Key choosers over [0, n). Immutable after construction (shared by threads); the caller's Rng is the only state.
//   uniform
//   zipfian(theta)   Gray et al.'s generator as in YCSB; rank r is mapped to key (r * stride) mod n, a bijection
//                    with a stride coprime to n, so the distribution over keys is exactly Zipfian while the hot keys
//                    are spread over the key space
//   hotspot(h, p)    with probability p a key in [0, h) (the hot set), otherwise one in [h, n)
//   nurand(a)        TATP's non-uniform choice: ((rand[0, a] | rand[0, n)) mod n)
#include <cstdint>

#include "workload/workload.h"

namespace rdx::workload {

class KeyChooser {
 public:
  KeyChooser() : KeyChooser(Kind::kUniform, 1) {}
  static KeyChooser uniform(uint64_t n);
  static KeyChooser zipfian(uint64_t n, double theta);  // theta in (0, 1); O(n) setup (zeta)
  static KeyChooser hotspot(uint64_t n, uint64_t hot, double hot_probability);
  static KeyChooser nurand(uint64_t n, uint64_t a);

  uint64_t next(Rng& rng) const;
  uint64_t size() const { return n_; }

 private:
  enum class Kind : uint8_t { kUniform, kZipfian, kHotspot, kNuRand };
  KeyChooser(Kind k, uint64_t n) : kind_(k), n_(n) {}
  uint64_t zipf_rank(Rng& rng) const;

  Kind kind_;
  uint64_t n_;
  // zipfian
  double theta_ = 0, zetan_ = 0, alpha_ = 0, eta_ = 0, half_pow_theta_ = 0;
  uint64_t stride_ = 1;
  // hotspot
  uint64_t hot_ = 0;
  double hot_probability_ = 0;
  // nurand
  uint64_t a_ = 0;
};

}  // namespace rdx::workload
