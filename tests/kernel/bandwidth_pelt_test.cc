// The PELT clock of a cpu.max-throttled runqueue (cfs_rq_clock_pelt(), kernel/sched/pelt.h):
// it stands still, so the runqueue's averages neither decay nor grow, and the time it stood
// still is left out of its clock for good. 6.12 stops it from the throttle to the
// unthrottle; 6.18+ (task based throttling) only while nothing is queued on the runqueue.
#include <gtest/gtest.h>

#include <vector>

#include "kernel/sched/pelt.h"
#include "kernel/sched/sched.h"
#include "tests/kernel/group_support.h"
#include "tests/kernel/harness.h"

using group_support::hog;
using group_support::in_group;
using group_support::kVersions;
using testing_support::Sim;
using testing_support::flat_machine;

namespace {

constexpr sim::Time kMs = sim::kNsecPerMsec;
constexpr sim::Time kSec = sim::kNsecPerSec;

struct Sample {
  bool throttled, frozen;
  unsigned nr_queued;
  kernel::u64 clock;
  unsigned long util_avg, load_avg;
};

// cpu.max "20000 100000": the group's hog shares CPU 0 with a root hog, so it uses its quota
// about 40 ms into each period and waits throttled for the other 60 ms, while the CPU stays
// busy (its ticks and periodic balance, which decays blocked averages, go on). CPU 1 idles.
// Sampled every millisecond: while the clock stands still the group runqueue's averages do
// not move; it stands still exactly while the runqueue is throttled (6.12) or throttled
// with nothing queued (6.18+); and its clock ends about 10 x 60 ms behind the CPU's (the
// last throttle is still on at the end).
TEST(BandwidthPelt, AThrottledRunqueuesPeltClockStandsStill) {
  for (auto v : kVersions) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(flat_machine(2), testing_support::no_autogroup(kernel::default_config(v)));
    const int a = group_support::cpu_max_group(*s.k, "/a", 20000, 100000);
    s.spawn(in_group(a, 0), hog);
    s.spawn(in_group(0, 0), hog);
    const kernel::cfs_rq* cfs = s.k->task_group_by_id(a)->cfs_rq[0];
    std::vector<Sample> samples;
    testing_support::Sampler sampler(s, kMs, [&](sim::Time) {
      samples.push_back({cfs->throttle_count > 0, cfs->pelt_clock_throttled, cfs->nr_queued,
                         kernel::cfs_rq_clock_pelt(cfs), cfs->avg.util_avg, cfs->avg.load_avg});
    });
    s.run(kSec);
    int frozen = 0, still_pairs = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      const Sample& x = samples[i];
      SCOPED_TRACE(i);
      frozen += x.frozen;
      if (v == kernel::KernelVersion::V6_12)
        EXPECT_EQ(x.frozen, x.throttled);
      else
        EXPECT_EQ(x.frozen, x.throttled && x.nr_queued == 0);
      if (i == 0 || !x.frozen || !samples[i - 1].frozen) continue;
      const Sample& w = samples[i - 1];
      ++still_pairs;
      EXPECT_EQ(x.clock, w.clock);
      EXPECT_EQ(x.util_avg, w.util_avg);
      EXPECT_EQ(x.load_avg, w.load_avg);
    }
    EXPECT_GT(frozen, 9 * 50);
    EXPECT_GT(still_pairs, 9 * 50);
    EXPECT_GT(samples.back().util_avg, 0u) << "the group's averages were not decayed away";
    const kernel::rq* rq = s.k->rq_of(0);
    const double behind =
        static_cast<double>(kernel::rq_clock_pelt(rq) - kernel::cfs_rq_clock_pelt(cfs));
    EXPECT_NEAR(behind, 10 * 60.0 * kMs, 25.0 * kMs);
  }
}

}  // namespace
