// Seeded pseudo-random numbers, split into independent streams.
// One Rng per consumer (thread, device): a stream is derived from (run seed, stream id) alone,
// so adding a thread does not perturb the draws of the others. Distributions are written here
// (not <random>) so that results are identical on every standard library.
#pragma once
#include <libdivide.h>

#include <cmath>
#include <cstdint>

namespace sim {

// xoshiro256** (Blackman & Vigna), seeded through splitmix64.
class Rng {
 public:
  Rng() : Rng(0, 0) {}
  Rng(uint64_t seed, uint64_t stream) {
    uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL + 0x9e3779b97f4a7c15ULL);
    for (auto& w : s_) w = splitmix64(&x);
  }

  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform integer in [lo, hi] (inclusive); REQUIRES lo <= hi.
  int64_t uniform_int(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
    if (span == 0) return static_cast<int64_t>(next_u64());
    // bias < 2^-40 for spans we use; the sum wraps like two's complement, never overflows
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + next_u64() % span);
  }
  // Exponential with the given mean (inverse transform).
  double exponential(double mean) { return -mean * std::log1p(-uniform01()); }
  // Standard normal (Box-Muller; the second value is discarded to keep draws per call fixed).
  double normal(double mean, double stddev) {
    double u1 = uniform01();
    if (u1 < 1e-300) u1 = 1e-300;
    const double u2 = uniform01();
    return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix64(uint64_t* x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t s_[4];
};

// Rng::uniform_int over a range fixed in advance: the same draws, with the modulo done by
// libdivide's multiply and shift instead of a 64-bit divide (tens of cycles on every draw).
class UniformInt {
 public:
  UniformInt() : UniformInt(0, 0) {}
  // REQUIRES lo <= hi.
  UniformInt(int64_t lo, int64_t hi)
      : lo_(lo), span_(static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1) {
    if (span_ != 0) div_ = libdivide::divider<uint64_t>(span_);
  }
  int64_t operator()(Rng& rng) const {
    const uint64_t x = rng.next_u64();
    if (span_ == 0) return static_cast<int64_t>(x);
    return static_cast<int64_t>(static_cast<uint64_t>(lo_) + reduce(x));
  }
  // x % span, by multiplication. REQUIRES the range is not the whole 64-bit range.
  uint64_t reduce(uint64_t x) const { return x - x / div_ * span_; }

 private:
  int64_t lo_;
  uint64_t span_;  // 0: the whole 64-bit range
  libdivide::divider<uint64_t> div_{1};
};

}  // namespace sim
