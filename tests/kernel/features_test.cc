// Scheduler feature defaults per version (kernel/sched/features.h) and the buddy features,
// NEXT_BUDDY and PICK_BUDDY, as each version implements them.
#include <gtest/gtest.h>

#include <string>

#include "kernel/config.h"
#include "kernel/sched/sched.h"
#include "tests/kernel/harness.h"

using testing_support::Sim;
using testing_support::flat_machine;

namespace {

bool feat_default(kernel::KernelVersion v, const std::string& name) {
  const kernel::KernelConfig c = kernel::default_config(v);
  for (int i = 0; i < kernel::nr_sched_feats(); ++i)
    if (name == kernel::sched_feat_name(i)) return c.features & (1u << i);
  ADD_FAILURE() << "no feature " << name;
  return false;
}

// features.h of each version: NEXT_BUDDY is off in 6.12, 6.18 and 7.0 (on only between
// 6.19-rc1 and -rc7); PICK_BUDDY is on from its introduction (6.18 has it, 6.12 not);
// NI_RANDOM is in 6.18.5 and 7.0, not in 6.12.0; the rest are the same in all three.
TEST(Features, DefaultsFollowEachVersionsFeaturesH) {
  using kernel::KernelVersion;
  for (KernelVersion v : {KernelVersion::V6_12, KernelVersion::V6_18, KernelVersion::V7_0}) {
    const std::string name = kernel::version_name(v);
    EXPECT_FALSE(feat_default(v, "NEXT_BUDDY")) << name;
    EXPECT_EQ(feat_default(v, "PICK_BUDDY"), v != KernelVersion::V6_12) << name;
    EXPECT_EQ(feat_default(v, "NI_RANDOM"), v != KernelVersion::V6_12) << name;
    for (const char* on : {"PLACE_LAG", "PLACE_DEADLINE_INITIAL", "PLACE_REL_DEADLINE",
                           "RUN_TO_PARITY", "PREEMPT_SHORT", "DELAY_DEQUEUE", "DELAY_ZERO",
                           "WAKEUP_PREEMPTION", "TTWU_QUEUE", "RT_PUSH_IPI", "SIS_UTIL",
                           "WA_IDLE", "WA_WEIGHT", "WA_BIAS", "UTIL_EST"})
      EXPECT_TRUE(feat_default(v, on)) << name << " " << on;
    EXPECT_FALSE(feat_default(v, "HRTICK")) << name;
  }
}

// Three task entities on CPU 0's runqueue, equal weights; V = 100. a is eligible with a late
// deadline, b eligible with the earliest eligible deadline, c ineligible. a is the next buddy.
struct BuddyRq {
  Sim s;
  kernel::cfs_rq& cfs;
  kernel::task_struct a, b, c;
  explicit BuddyRq(kernel::KernelConfig cfg)
      : s(flat_machine(1), cfg), cfs(s.k->rq_of(0)->cfs) {
    for (auto* t : {&a, &b, &c}) {
      t->se.owner = t;
      t->se.cfs_rq = &cfs;
      t->se.on_rq = true;
    }
    a.se.vruntime = 0;   a.se.deadline = 500;
    b.se.vruntime = 100; b.se.deadline = 300;
    c.se.vruntime = 200; c.se.deadline = 250;
    for (auto* t : {&a, &b, &c}) {
      cfs.sum_w_vruntime += static_cast<int64_t>(t->se.vruntime) * 1024;
      cfs.sum_weight += 1024;
      cfs.timeline.push_back(&t->se);
    }
    cfs.nr_queued = 3;
    cfs.next = &a.se;
  }
  ~BuddyRq() {  // leave the runqueue as the kernel's teardown expects it
    cfs.timeline.clear();
    cfs.nr_queued = 0;
    cfs.next = nullptr;
    cfs.sum_w_vruntime = cfs.sum_weight = 0;
  }
  kernel::task_struct* pick() { return kernel::fair_sched_class.pick_task(s.k->rq_of(0)); }
};

kernel::KernelConfig with(kernel::KernelVersion v, const char* feat, bool on) {
  kernel::KernelConfig cfg = kernel::default_config(v);
  EXPECT_EQ(kernel::set_config_key(&cfg, std::string("sched_feat.") + feat, on ? "true" : "false"), "");
  return cfg;
}

// 7.0: __pick_eevdf() returns an eligible next buddy under PICK_BUDDY, so the wakeup's pick
// sees it too; without PICK_BUDDY the buddy is ignored.
TEST(Features, PickBuddyIn70TakesTheEligibleBuddyInsidePickEevdf) {
  {
    BuddyRq r(with(kernel::KernelVersion::V7_0, "PICK_BUDDY", true));
    EXPECT_EQ(kernel::pick_eevdf(&r.cfs, true), &r.a.se);
    EXPECT_EQ(r.pick(), &r.a);
  }
  {
    BuddyRq r(with(kernel::KernelVersion::V7_0, "PICK_BUDDY", false));
    EXPECT_EQ(kernel::pick_eevdf(&r.cfs, true), &r.b.se);
    EXPECT_EQ(r.pick(), &r.b);
  }
}

// 6.18: pick_next_entity() takes the buddy under PICK_BUDDY, but __pick_eevdf() (the
// wakeup's pick) does not look at it. 6.12: the same, under NEXT_BUDDY instead.
TEST(Features, BuddyBefore70IsTakenByPickNextEntityOnly) {
  {
    BuddyRq r(kernel::default_config(kernel::KernelVersion::V6_18));  // PICK_BUDDY on
    EXPECT_EQ(kernel::pick_eevdf(&r.cfs, true), &r.b.se);
    EXPECT_EQ(r.pick(), &r.a);
  }
  {
    BuddyRq r(kernel::default_config(kernel::KernelVersion::V6_12));  // NEXT_BUDDY off
    EXPECT_EQ(r.pick(), &r.b);
  }
  {
    BuddyRq r(with(kernel::KernelVersion::V6_12, "NEXT_BUDDY", true));
    EXPECT_EQ(kernel::pick_eevdf(&r.cfs, true), &r.b.se);
    EXPECT_EQ(r.pick(), &r.a);
  }
  {
    BuddyRq r(with(kernel::KernelVersion::V6_12, "PICK_BUDDY", true));  // no such flag in 6.12
    EXPECT_EQ(r.pick(), &r.b);
  }
}

// A buddy is never left pointing at an entity that left its runqueue or is delayed there:
// dequeue_entity() calls clear_buddies() first, before the delayed-dequeue test. It matters
// for an entity dequeued without a set_next_entity() at its level since it became the buddy.
// A task sleeping in a group that stays queued makes the group's entity the buddy
// (dequeue_entities(): set_next_buddy(parent)); the group keeps running its other tasks with
// no new set_next_entity() at the root (pick_next_task_fair() sets only the levels that
// change), and leaves the root when its last task sleeps. A probe every 5 us looks at CPU 0's
// root runqueue and the group runqueue its tasks are queued on (autogroup, the default):
// each next buddy is queued there and not delayed. Two workloads per version: a worker that
// sleeps 1 ms every 2 ms and a short sleeper, with the version's defaults (the group's entity
// is the buddy, and leaves whenever both sleep); a hog and two sleepers with NEXT_BUDDY on
// (the wakees are the buddies of the group's runqueue and leave when they sleep). The runs
// keep the usual accounting invariants.
user::Program hog(user::Thread& t) {
  for (;;) co_await t.compute(1000000000);
}

// Counts the buddies a runqueue has at a sample, and those that are not queued on it or are
// delayed.
struct BuddyCount {
  int with_buddy = 0, bad = 0;
  void check(const kernel::cfs_rq* cfs) {
    const kernel::sched_entity* next = cfs->next;
    if (!next) return;
    ++with_buddy;
    bad += !next->on_rq || next->sched_delayed || next->cfs_rq != cfs;
  }
};

TEST(Features, NextBuddyIsClearedWhenItsEntityLeaves) {
  for (auto v : {kernel::KernelVersion::V6_12, kernel::KernelVersion::V6_18, kernel::KernelVersion::V7_0}) {
    for (bool wakee_buddies : {false, true}) {
      SCOPED_TRACE(std::string(kernel::version_name(v)) +
                   (wakee_buddies ? ": hog, two sleepers, NEXT_BUDDY" : ": worker, short sleeper"));
      Sim s(flat_machine(1),
            wakee_buddies ? with(v, "NEXT_BUDDY", true) : kernel::default_config(v));
      kernel::TaskAttr a;
      a.cpus = {0};
      int probed = 0;
      if (wakee_buddies) {
        s.spawn(a, hog);
        for (sim::Time sleep : {3 * sim::kNsecPerMsec, 700 * sim::kNsecPerUsec}) {
          probed = s.spawn(a, [sleep](user::Thread& t) -> user::Program {
            for (;;) {
              co_await t.nanosleep(sleep);
              co_await t.compute(300 * sim::kNsecPerUsec);
            }
          });
        }
      } else {
        probed = s.spawn(a, [](user::Thread& t) -> user::Program {
          for (;;) {
            co_await t.compute(2 * sim::kNsecPerMsec);
            co_await t.nanosleep(sim::kNsecPerMsec);
          }
        });
        s.spawn(a, [](user::Thread& t) -> user::Program {
          for (;;) {
            co_await t.nanosleep(300 * sim::kNsecPerUsec);
            co_await t.compute(50 * sim::kNsecPerUsec);
          }
        });
      }
      const kernel::rq* rq = s.k->rq_of(0);
      const kernel::task_struct* task = &s.task(probed);  // on the group runqueue below the root
      BuddyCount probe;
      int samples = 0;
      testing_support::Sampler sampler(s, 5 * sim::kNsecPerUsec, [&](sim::Time) {
        ++samples;
        probe.check(&rq->cfs);
        const kernel::cfs_rq* group = task->se.cfs_rq;
        if (group && group != &rq->cfs) probe.check(group);
      });
      s.run(500 * sim::kNsecPerMsec);
      testing_support::check_invariants(*s.k, 500 * sim::kNsecPerMsec);
      ASSERT_NE(task->se.cfs_rq, &rq->cfs) << "the tasks are in a group below the root";
      EXPECT_GT(probe.with_buddy, 1000) << "of " << samples << " samples";
      EXPECT_EQ(probe.bad, 0);
    }
  }
}


// set_next_entity() clears the buddies of the entity it makes current (clear_buddies() at its
// top, in 6.12 through 7.0): a picked buddy is no longer cfs_rq->next while it runs. Here,
// in the root group with NEXT_BUDDY on, each wakeup of the sleeper makes it the buddy and
// preempts the hog; a probe every 5 us finds the sleeper running at times (as the picked
// buddy), and the running entity never the buddy. (Without the clearing, about a quarter
// of the samples find it so.)
TEST(Features, APickedBuddyIsNoLongerTheBuddy) {
  for (auto v :
       {kernel::KernelVersion::V6_12, kernel::KernelVersion::V6_18, kernel::KernelVersion::V7_0}) {
    SCOPED_TRACE(kernel::version_name(v));
    Sim s(flat_machine(1), testing_support::no_autogroup(with(v, "NEXT_BUDDY", true)));
    kernel::TaskAttr a;
    a.cpus = {0};
    s.spawn(a, hog);
    const int sleeper = s.spawn(a, [](user::Thread& t) -> user::Program {
      for (;;) {
        co_await t.nanosleep(700 * sim::kNsecPerUsec);
        co_await t.compute(300 * sim::kNsecPerUsec);
      }
    });
    const kernel::cfs_rq& cfs = s.k->rq_of(0)->cfs;
    const kernel::sched_entity* sleeper_se = &s.task(sleeper).se;
    int samples = 0, sleeper_running = 0, bad = 0;
    testing_support::Sampler sampler(s, 5 * sim::kNsecPerUsec, [&](sim::Time) {
      ++samples;
      sleeper_running += cfs.curr == sleeper_se;
      bad += cfs.next != nullptr && cfs.next == cfs.curr;
    });
    s.run(200 * sim::kNsecPerMsec);
    testing_support::check_invariants(*s.k, 200 * sim::kNsecPerMsec);
    EXPECT_GT(sleeper_running, 5000) << "of " << samples << " samples";
    EXPECT_EQ(bad, 0) << "of " << samples << " samples";
  }
}

}  // namespace
