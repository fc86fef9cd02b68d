// The runner's measured window with many threads on few CPUs: the threads are created before
// it opens and it closes when its time is up, however many busy threads compete with the
// main thread for a CPU. Bounds are generous (a loaded 2-CPU VM, a container throttled by its
// cpu.max for several 100 ms periods); without the start gate and the threads' own end check,
// 200 spinning threads on 2 CPUs made a 100 ms run take seconds.
#include <gtest/gtest.h>

#include <string>

#include "real/runner.h"

namespace {

constexpr int kThreads = 200;
constexpr int64_t kDurationNs = 100'000'000;
constexpr double kSlackS = 0.6;

TEST(RunnerWindow, ExtendSched2WithManyThreadsMeasuresTheRequestedWindow) {
  real::Params p = real::default_params(real::Workload::kExtendSched2);
  p.threads = kThreads;
  p.duration_ns = kDurationNs;
  p.cs_iterations = 1'000;
  real::RunResult r;
  ASSERT_EQ(real::run(p, &r), "");
  EXPECT_GE(r.elapsed_s, 0.1);
  EXPECT_LT(r.elapsed_s, 0.1 + kSlackS);
  EXPECT_GT(r.setup_s, 0.0);  // thread creation, reported apart from the window
  EXPECT_GT(r.runs, 0u);
  uint64_t counts = 0;
  for (const real::ThreadStats& t : r.threads) counts += t.count;
  EXPECT_EQ(counts, r.runs);  // critical sections begun after the end are not counted
}

TEST(RunnerWindow, LockTableWithManyClientsMeasuresTheRequestedWindow) {
  real::Params p = real::default_params(real::Workload::kLockTable);
  p.clients = kThreads;
  p.hogs = 2;
  p.duration_ns = kDurationNs;
  p.query_ns = 20'000;
  p.cs_ns = 5'000;
  real::RunResult r;
  ASSERT_EQ(real::run(p, &r), "");
  EXPECT_GE(r.elapsed_s, 0.1);
  EXPECT_LT(r.elapsed_s, 0.1 + kSlackS);
  EXPECT_GT(r.setup_s, 0.0);
  for (const real::ThreadStats& t : r.threads)
    if (r.backend == real::Backend::kNone) {
      EXPECT_EQ(t.slice.requests, t.count);
    }
}

}  // namespace
