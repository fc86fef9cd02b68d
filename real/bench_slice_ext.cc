// Google Benchmark: what the slice extension protocol adds to an uncontended lock/unlock pair,
// for the backend the host gives and for each protocol pointed at a dummy word (so the
// mainline and RFC costs are measured on kernels without support). Numbers: docs/real.md.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>

#include "real/slice_ext.h"

namespace {

// The baseline: SliceSpinLock without the request, same acquire/retry shape.
class PlainSpinLock {
 public:
  void lock() {
    for (;;) {
      if (!word_.exchange(1, std::memory_order_acquire)) return;
      while (word_.load(std::memory_order_relaxed) != 0) real::cpu_relax();
    }
  }
  void unlock() { word_.store(0, std::memory_order_release); }

 private:
  std::atomic<uint32_t> word_{0};
};

// A dummy slice_ctrl / sched_delay, on its own cache line as the rseq area would be.
struct alignas(64) DummyWord {
  uint8_t bytes[4] = {};
};

// One lock/unlock pair per iteration. `requests` (per iteration) checks that the protocol
// ran: 1 for the slice locks, 0 for the plain one.
template <class Lock>
void lock_unlock_loop(benchmark::State& state, Lock& lock) {
  real::reset_thread_counters();
  uint64_t protected_counter = 0;
  for (auto _ : state) {
    lock.lock();
    ++protected_counter;
    benchmark::DoNotOptimize(protected_counter);
    lock.unlock();
  }
  state.counters["requests"] = benchmark::Counter(
      static_cast<double>(real::thread_counters().requests), benchmark::Counter::kAvgIterations);
}

void BM_PlainTTAS(benchmark::State& state) {
  PlainSpinLock lock;
  lock_unlock_loop(state, lock);
}
BENCHMARK(BM_PlainTTAS);

// Backend None as a thread that asked for nothing gets it.
void BM_SliceSpinLock_None(benchmark::State& state) {
  real::init_thread(real::Request::kNone);
  real::SliceSpinLock lock;
  lock_unlock_loop(state, lock);
}
BENCHMARK(BM_SliceSpinLock_None);

// Whatever automatic selection picks on this host (the label says which).
void BM_SliceSpinLock_HostAuto(benchmark::State& state) {
  const real::Selection sel = real::init_thread(real::Request::kAuto);
  state.SetLabel(real::backend_name(sel.backend));
  real::SliceSpinLock lock;
  lock_unlock_loop(state, lock);
  real::TEST_reset_thread();
}
BENCHMARK(BM_SliceSpinLock_HostAuto);

// The mainline protocol (store request; store 0, load granted) on a dummy slice_ctrl.
void BM_SliceSpinLock_MainlineProtocol(benchmark::State& state) {
  DummyWord dummy;
  real::TEST_use_word(real::Backend::kMainline, dummy.bytes);
  real::SliceSpinLock lock;
  lock_unlock_loop(state, lock);
  real::TEST_reset_thread();
}
BENCHMARK(BM_SliceSpinLock_MainlineProtocol);

// The RFC protocol (store REQ; load answer, store 0) on a dummy sched_delay.
void BM_SliceSpinLock_RfcProtocol(benchmark::State& state) {
  DummyWord dummy;
  real::TEST_use_word(real::Backend::kRfc, dummy.bytes);
  real::SliceSpinLock lock;
  lock_unlock_loop(state, lock);
  real::TEST_reset_thread();
}
BENCHMARK(BM_SliceSpinLock_RfcProtocol);

// The guard alone (no lock), to separate the protocol from the atomic exchange. The baseline
// is the same loop with the compiler barrier the guard implies, which keeps `n` in memory.
void BM_NoGuard(benchmark::State& state) {
  uint64_t n = 0;
  for (auto _ : state) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    ++n;
    benchmark::DoNotOptimize(n);
  }
}
BENCHMARK(BM_NoGuard);

void BM_SliceGuard_None(benchmark::State& state) {
  real::init_thread(real::Request::kNone);
  uint64_t n = 0;
  for (auto _ : state) {
    real::SliceGuard guard;
    ++n;
    benchmark::DoNotOptimize(n);
  }
}
BENCHMARK(BM_SliceGuard_None);

void BM_SliceGuard_MainlineProtocol(benchmark::State& state) {
  DummyWord dummy;
  real::TEST_use_word(real::Backend::kMainline, dummy.bytes);
  uint64_t n = 0;
  for (auto _ : state) {
    real::SliceGuard guard;
    ++n;
    benchmark::DoNotOptimize(n);
  }
  real::TEST_reset_thread();
}
BENCHMARK(BM_SliceGuard_MainlineProtocol);

}  // namespace

BENCHMARK_MAIN();
