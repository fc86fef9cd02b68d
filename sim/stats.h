// Small statistics primitives for results: a min/max/sum summary and a log-linear latency
// histogram (HdrHistogram-like: 1/64 relative precision) with percentiles. Value types.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>

namespace sim {

struct Summary {
  uint64_t count = 0;
  int64_t sum = 0;
  int64_t min = INT64_MAX;
  int64_t max = INT64_MIN;
  void add(int64_t v) {
    ++count;
    sum += v;
    min = std::min(min, v);
    max = std::max(max, v);
  }
  double mean() const { return count ? static_cast<double>(sum) / static_cast<double>(count) : 0.0; }
};

// Buckets: values < 64 exactly; above, 64 sub-buckets per power of two.
class Histogram {
 public:
  void add(int64_t v) {
    if (v < 0) v = 0;
    ++buckets_[index(static_cast<uint64_t>(v))];
    summary_.add(v);
  }
  const Summary& summary() const { return summary_; }
  // Value at quantile q in [0,1]: the upper edge of the bucket holding it (exact max for q=1).
  int64_t percentile(double q) const {
    if (summary_.count == 0) return 0;
    if (q >= 1.0) return summary_.max;
    uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(summary_.count - 1)) + 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
      seen += buckets_[i];
      if (seen >= rank) return std::min(upper(i), summary_.max);
    }
    return summary_.max;
  }

 private:
  static constexpr int kSub = 64;
  static size_t index(uint64_t v) {
    if (v < kSub) return v;
    int msb = 63 - __builtin_clzll(v);          // >= 6
    uint64_t sub = (v >> (msb - 6)) & (kSub - 1);
    return static_cast<size_t>((msb - 5) * kSub + sub);
  }
  static int64_t upper(size_t i) {
    if (i < kSub) return static_cast<int64_t>(i);
    int msb = static_cast<int>(i / kSub) + 5;
    uint64_t sub = i % kSub;
    uint64_t lo = (uint64_t{1} << msb) | (sub << (msb - 6));
    return static_cast<int64_t>(lo + (uint64_t{1} << (msb - 6)) - 1);
  }
  std::array<uint64_t, (64 - 5) * kSub> buckets_{};
  Summary summary_;
};

}  // namespace sim
