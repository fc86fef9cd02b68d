// A set of CPUs as a bitmap of 64-bit words: Linux's struct cpumask (cpumask_t) with the
// cpumask_*() operations the model uses. Word-wise, so walking a sparse mask (a thread pinned
// to one CPU of 8192) or counting one costs a word per 64 CPUs, not a test per CPU.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kernel {

class cpumask {
 public:
  // n CPUs, all set (cpumask_setall()) or all clear (cpumask_clear()).
  void assign(int n, bool set) {
    n_ = n;
    words_.assign((static_cast<size_t>(n) + 63) / 64, set ? ~uint64_t{0} : 0);
    if (set && n % 64) words_.back() = (uint64_t{1} << (n % 64)) - 1;
  }
  int size() const { return n_; }  // nr_cpu_ids
  // cpumask_test_cpu().
  bool test(int cpu) const { return words_[static_cast<size_t>(cpu) / 64] >> (cpu % 64) & 1; }
  // cpumask_set_cpu(); returns true if the CPU was clear.
  bool set(int cpu) {
    uint64_t& w = words_[static_cast<size_t>(cpu) / 64];
    const uint64_t bit = uint64_t{1} << (cpu % 64);
    const bool was_clear = !(w & bit);
    w |= bit;
    return was_clear;
  }
  // cpumask_clear_cpu().
  void clear(int cpu) { words_[static_cast<size_t>(cpu) / 64] &= ~(uint64_t{1} << (cpu % 64)); }
  // cpumask_weight().
  int weight() const {
    int n = 0;
    for (uint64_t w : words_) n += std::popcount(w);
    return n;
  }
  // cpumask_first(): size() if the mask is empty.
  int first() const {
    for (size_t i = 0; i < words_.size(); ++i)
      if (words_[i]) return static_cast<int>(i * 64) + std::countr_zero(words_[i]);
    return n_;
  }
  // for_each_cpu(): f(cpu) for each CPU of the mask, ascending.
  template <class F>
  void for_each(F f) const {
    for (size_t i = 0; i < words_.size(); ++i)
      for (uint64_t w = words_[i]; w; w &= w - 1) f(static_cast<int>(i * 64) + std::countr_zero(w));
  }

 private:
  std::vector<uint64_t> words_;
  int n_ = 0;
};

}  // namespace kernel
