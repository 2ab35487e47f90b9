#pragma once
// Latency histogram with log-linear buckets (HDR-style): values are bucketed by power of two with 64 linear
// sub-buckets, so any percentile is reported within ~1.6% of the true value without keeping samples. Merging is
// addition, so per-thread histograms combine exactly.
#include <array>
#include <bit>
#include <cstdint>

namespace rdx {

class Histogram {
 public:
  static constexpr int kSubBits = 6;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kBuckets = (64 - kSubBits + 1) * kSub;

  void record(uint64_t v) {
    ++counts_[index(v)];
    ++count_;
    sum_ += v;
    if (v > max_) max_ = v;
    if (count_ == 1 || v < min_) min_ = v;
  }
  // Adds `n` samples to bucket `i` (rebuilding a histogram sent as bucket counts); they count as its upper bound.
  void add_bucket(int i, uint64_t n) {
    if (n == 0) return;
    uint64_t v = upper_bound(i);
    counts_[i] += n;
    if (count_ == 0 || v < min_) min_ = v;
    count_ += n;
    sum_ += v * n;
    if (v > max_) max_ = v;
  }
  void merge(const Histogram& o) {
    for (int i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    count_ += o.count_;
    sum_ += o.sum_;
    if (o.count_ > 0) {
      max_ = o.max_ > max_ ? o.max_ : max_;
      min_ = (count_ == o.count_ || o.min_ < min_) ? o.min_ : min_;
    }
  }
  uint64_t count() const { return count_; }
  uint64_t bucket_count(int i) const { return counts_[i]; }
  uint64_t max() const { return max_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  double mean() const { return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0.0; }
  // Value at quantile q in [0, 1]: the upper bound of the bucket holding it (clamped to the observed max).
  uint64_t quantile(double q) const {
    if (count_ == 0) return 0;
    auto rank = static_cast<uint64_t>(q * static_cast<double>(count_ - 1)) + 1;
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) {
        uint64_t hi = upper_bound(i);
        return hi < max_ ? hi : max_;
      }
    }
    return max_;
  }

  // Values below kSub have exact buckets; above, the leading kSubBits+1 bits select the bucket.
  static int index(uint64_t v) {
    if (v < kSub) return static_cast<int>(v);
    int shift = (63 - std::countl_zero(v)) - kSubBits;  // >= 0
    return (shift + 1) * kSub + static_cast<int>((v >> shift) - kSub);
  }
  static uint64_t upper_bound(int i) {
    if (i < kSub) return static_cast<uint64_t>(i);
    int shift = i / kSub - 1;
    uint64_t top = static_cast<uint64_t>(kSub + i % kSub);
    return ((top + 1) << shift) - 1;
  }

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0, sum_ = 0, max_ = 0, min_ = 0;
};

}  // namespace rdx
