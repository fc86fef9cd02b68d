// A mixed load that crosses the scheduler's features at random: tasks in groups with cpu.max
// and in the root group, fair and RT, sleeping, blocking on futexes, yielding and renicing
// one another (queued, running, delayed or throttled), on every kernel version and
// preemption model, 300 ms each. The kernel's
// bookkeeping (runqueue counts, the balancer's view, RT lists, group sums) must hold at every
// probe; a path that loses or double-counts a task trips an assert or an invariant here.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <array>
#include <vector>

#include "hw/machine.h"
#include "kernel/sched/sched.h"
#include "tests/kernel/group_support.h"
#include "tests/kernel/harness.h"
#include "user/sync.h"

namespace {

using testing_support::Sim;

constexpr sim::Time kUs = sim::kNsecPerUsec;
constexpr sim::Time kMs = sim::kNsecPerMsec;

struct Shared {
  std::array<kernel::UserWord, 3> words;
  std::vector<int> pids;
};

// One step at a time, drawn from the thread's own stream: compute, sleep, wait on or wake a
// word, yield, or renice another task of the load.
user::Program mixed(user::Thread& t, Shared* sh) {
  for (;;) {
    co_await t.compute(t.rng().uniform_int(5 * kUs, 400 * kUs));
    const int64_t what = t.rng().uniform_int(0, 9);
    kernel::UserWord* w = &sh->words[static_cast<size_t>(t.rng().uniform_int(0, 2))];
    if (what <= 2) {
      co_await t.nanosleep(t.rng().uniform_int(10 * kUs, 3 * kMs));
    } else if (what <= 4) {
      const int64_t v = w->value;
      co_await t.futex_wait(w, v);
    } else if (what <= 6) {
      w->value++;
      co_await t.futex_wake(w, t.rng().uniform_int(1, 3));
    } else if (what == 7) {
      co_await t.sched_yield();
    } else {
      const int64_t who = sh->pids[static_cast<size_t>(t.rng().uniform_int(
          0, static_cast<int64_t>(sh->pids.size()) - 1))];
      co_await t.setpriority(PRIO_PROCESS, who, t.rng().uniform_int(-5, 10));
    }
  }
}

}  // namespace

// Seed 1 on 4 flat CPUs without autogroup, seed 2 on two sockets of two SMT cores with it,
// seed 3 on two LLCs of four CPUs; under each preemption model a version offers.
TEST(MixedLoad, EveryVersionKeepsItsBookkeepingUnderARandomMix) {
  for (auto v : group_support::kVersions) {
    for (const char* model : {"none", "voluntary", "full", "lazy"}) {
    for (uint64_t seed : {1, 2, 3}) {
      SCOPED_TRACE(std::string(kernel::version_name(v)) + " " + model + " seed " +
                   std::to_string(seed));
      kernel::KernelConfig cfg = kernel::default_config(v);
      if (!kernel::set_config_key(&cfg, "preempt", model).empty()) continue;  // not in v
      cfg.seed = seed;
      cfg.sched_autogroup_enabled = seed == 2;
      hw::Machine m = testing_support::flat_machine(4);
      if (seed > 1) {
        const char* name = seed == 2 ? "synth:2x2x2" : "synth:2x4x1";
        ASSERT_TRUE(hw::load_machine(name, &m).ok());
      }
      Sim s(m, cfg);
      const int a = s.k->create_task_group("/a");
      const int b = s.k->create_task_group("/b");
      s.k->set_task_group_cpu_max(a, 3000, 10000);
      s.k->set_task_group_cpu_max(b, 8000, 20000);
      Shared sh;
      for (int i = 0; i < 12; ++i) {
        kernel::TaskAttr attr = group_support::in_group(i % 3 == 0 ? 0 : i % 3 == 1 ? a : b);
        if (i == 5 || i == 10) {  // two RT tasks among them
          attr.group = 0;
          attr.policy = SCHED_FIFO;
          attr.rt_priority = 10 + i;
        }
        if (i == 4) attr.cpus = {1};
        sh.pids.push_back(s.spawn(attr, [&sh](user::Thread& t) { return mixed(t, &sh); },
                                  static_cast<sim::Time>(i) * 50 * kUs));
      }
      // Nothing stays blocked for long: every 200 us a root task wakes all waiters.
      s.spawn(kernel::TaskAttr{}, [&sh](user::Thread& t) -> user::Program {
        for (;;) {
          co_await t.nanosleep(200 * kUs);
          for (kernel::UserWord& w : sh.words) {
            w.value++;
            co_await t.futex_wake(&w, 100);
          }
        }
      });
      int probes = 0;
      testing_support::Sampler probe(s, 997 * kUs, [&](sim::Time) {
        testing_support::check_structure(*s.k);
        ++probes;
      });
      s.k->start();
      s.engine.run_until(300 * kMs);
      EXPECT_GE(probes, 300);
      s.k->finish(300 * kMs);
      testing_support::check_invariants(*s.k, 300 * kMs);
    }
    }
  }
}
