// A small simulated machine for kernel tests: N CPUs in one LLC (or a built-in profile),
// helpers to start threads running a program, and the accounting invariants every run
// must keep (checked by check_invariants()).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <list>
#include <memory>
#include <utility>
#include <vector>

#include "hw/machine.h"
#include "kernel/kernel_impl.h"
#include "kernel/trace.h"
#include "kernel/sched/fair_balance.h"
#include "kernel/sched/pelt.h"
#include "sim/engine.h"
#include "user/thread.h"

namespace testing_support {

// m with timer interrupts up to `ns` late (costs.timer_irq_jitter_ns).
inline hw::Machine with_timer_jitter(hw::Machine m, sim::Time ns) {
  m.costs.timer_irq_jitter_ns = ns;
  return m;
}
// A machine whose timers interrupt exactly at expiry: for tests that pin what happens at a
// tick to the nanosecond.
inline hw::Machine exact_timers(hw::Machine m) { return with_timer_jitter(std::move(m), 0); }

inline hw::Machine flat_machine(int cpus) {
  hw::Machine m;
  EXPECT_TRUE(hw::load_machine("small4", &m).ok());
  m.topo.nr_cpus = cpus;
  m.topo.core_of.resize(cpus);
  m.topo.llc_of.assign(cpus, 0);
  m.topo.socket_of.assign(cpus, 0);
  for (int c = 0; c < cpus; ++c) m.topo.core_of[c] = c;
  return m;
}

// cfg with kernel.sched_autogroup_enabled=0, so the test's tasks are in the root group: for
// tests that pin what the root runqueue itself holds (with autogroup, the default, it holds
// the session's group entity instead).
inline kernel::KernelConfig no_autogroup(
    kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0)) {
  cfg.sched_autogroup_enabled = false;
  return cfg;
}

// A config whose sleeps end exactly at the time asked for (timer_slack_ns = 0): for tests that
// need a sleeper awake at a given instant or apart from other sleepers' interrupts.
inline kernel::KernelConfig exact_sleeps(
    kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0)) {
  cfg.timer_slack_ns = 0;
  return cfg;
}

struct Sim {
  sim::Engine engine;
  std::unique_ptr<kernel::KernelImpl> k;
  int tgid = 0;

  // KernelImpl tests pin one mechanism each, so by default the threads are forked from outside
  // the machine (launcher=outside: each at its start time, clone_ns apart, costing no CPU);
  // `launcher_task` (which overrides cfg.launcher_task) runs the launcher task that scenarios
  // run (kernel/fork.cc).
  explicit Sim(const hw::Machine& m,
               kernel::KernelConfig cfg = kernel::default_config(kernel::KernelVersion::V7_0),
               bool launcher_task = false) {
    cfg.launcher_task = launcher_task;
    k = std::make_unique<kernel::KernelImpl>(&engine, m, cfg);
    tgid = k->create_process("test");
  }
  // Starts a thread running prog(thread) with `attr`; returns its pid.
  int spawn(kernel::TaskAttr attr, std::function<user::Program(user::Thread&)> prog,
            sim::Time start = 0) {
    auto th = std::make_unique<user::Thread>(k.get(), sim::Rng(1, next_stream++));
    // A coroutine lambda's captures live in the closure, not in the frame: keep it alive.
    programs.push_back(std::move(prog));
    th->start(programs.back()(*th));
    return k->create_thread(tgid, attr, std::move(th), start);
  }
  void run(sim::Time end) {
    k->start();
    engine.run_until(end);
    k->finish(end);
  }
  const kernel::task_struct& task(int pid) const {
    for (const auto& t : k->tasks())
      if (t->pid == pid) return *t;
    throw std::runtime_error("no such pid");
  }
  uint64_t next_stream = 0;
  std::list<std::function<user::Program(user::Thread&)>> programs;
};

// Calls `sample(now)` every `period` from time `first` on: a probe of the kernel's state
// between events, on a timer of the run's engine (it changes nothing it reads).
class Sampler {
 public:
  Sampler(Sim& s, sim::Time period, std::function<void(sim::Time)> sample, sim::Time first = 1)
      : engine_(&s.engine), period_(period), sample_(std::move(sample)) {
    timer_.ctx = this;
    timer_.fn = [](sim::Timer* t, sim::Time now) {
      auto* self = static_cast<Sampler*>(t->ctx);
      self->sample_(now);
      self->engine_->arm(t, now + self->period_);
    };
    engine_->arm(&timer_, first);
  }
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

 private:
  sim::Engine* engine_;
  sim::Time period_;
  std::function<void(sim::Time)> sample_;
  sim::Timer timer_;
};

// Each rq's copy of its lowest domain's idle next balance (rq::sd_idle_next_balance) equals
// what update_next_balance() computes from the domain.
inline void check_sd_idle_next_balance(const kernel::KernelImpl& k) {
  for (int c = 0; c < k.nr_cpus(); ++c) {
    const kernel::rq& rq = k.cpu_rq(c);
    if (rq.sd.empty()) continue;
    EXPECT_EQ(rq.sd_idle_next_balance,
              rq.sd[0].last_balance + kernel::get_sd_balance_interval(&k, rq.sd[0], false))
        << "cpu " << c;
  }
}

// The packed per-CPU view that load balancing reads (KernelImpl::lb_view) equals the runqueues,
// and the group sums kept from it (KernelImpl::lb_sums) equal the sums over each group's CPUs.
inline void check_lb_view(const kernel::KernelImpl& k) {
  for (int c = 0; c < k.nr_cpus(); ++c) {
    const kernel::rq& rq = k.cpu_rq(c);
    const kernel::lb_cpu& v = k.lb_view[c];
    EXPECT_EQ(v.nr_running, rq.nr_running) << "cpu " << c;
    EXPECT_EQ(v.load, kernel::cpu_load(&rq)) << "cpu " << c;
    EXPECT_EQ(v.util, kernel::cpu_util_cfs(&rq)) << "cpu " << c;
    EXPECT_EQ(v.runnable, kernel::cpu_runnable(&rq)) << "cpu " << c;
    EXPECT_EQ(v.h_nr_running, kernel::lb_h_nr_running(&rq)) << "cpu " << c;
    EXPECT_EQ(bool{v.curr_idle}, rq.curr == rq.idle) << "cpu " << c;
    EXPECT_EQ(bool{v.wake_pending}, !rq.ex.wake_list.empty()) << "cpu " << c;
  }
  // Every sched group's kept sums equal the sums over its CPUs; the local group holds c.
  for (int c = 0; c < k.nr_cpus(); ++c) {
    for (const kernel::sched_domain& sd : k.cpu_rq(c).sd) {
      const std::span<const int> local = sd.groups[sd.local];
      EXPECT_TRUE(std::find(local.begin(), local.end(), c) != local.end()) << sd.name << " cpu " << c;
      for (size_t g = 0; g < sd.groups.size(); ++g) {
        if (!sd.group_sum[g]) continue;
        kernel::lb_sum want;
        for (int m : sd.groups[g]) {
          const kernel::lb_cpu& v = k.lb_view[m];
          want.nr_running += v.nr_running;
          want.load += static_cast<int64_t>(v.load);
          want.util += static_cast<int64_t>(v.util);
          want.runnable += static_cast<int64_t>(v.runnable);
          want.h_nr_running += v.h_nr_running;
          want.idle_cpus += v.idle();
        }
        EXPECT_EQ(sd.group_sum[g]->nr_running, want.nr_running) << sd.name << " group " << g;
        EXPECT_EQ(sd.group_sum[g]->load, want.load) << sd.name << " group " << g;
        EXPECT_EQ(sd.group_sum[g]->util, want.util) << sd.name << " group " << g;
        EXPECT_EQ(sd.group_sum[g]->runnable, want.runnable) << sd.name << " group " << g;
        EXPECT_EQ(sd.group_sum[g]->h_nr_running, want.h_nr_running) << sd.name << " group " << g;
        EXPECT_EQ(sd.group_sum[g]->idle_cpus, want.idle_cpus) << sd.name << " group " << g;
      }
    }
  }
}

// The tasks of rq's RT lists, most important first, each list in its order; checks that each
// list's links run both ways and end at its head and tail, that the task is queued there at
// its priority, and that the bitmap marks exactly the non-empty lists and rt_nr_running
// counts them all.
inline std::vector<const kernel::task_struct*> rt_queued(const kernel::rq& rq) {
  std::vector<const kernel::task_struct*> all;
  for (int prio = 0; prio < kernel::MAX_RT_PRIO; ++prio) {
    const kernel::rt_prio_list& q = rq.rt.active.queue[static_cast<size_t>(prio)];
    const bool bit = (rq.rt.active.bitmap[static_cast<size_t>(prio / 64)] >> (prio % 64)) & 1;
    EXPECT_EQ(bit, q.head != nullptr) << "cpu " << rq.cpu << " prio " << prio;
    EXPECT_EQ(q.head == nullptr, q.tail == nullptr) << "cpu " << rq.cpu << " prio " << prio;
    const kernel::task_struct* prev = nullptr;
    for (const kernel::task_struct* p = q.head; p; prev = p, p = p->rt.run_list.next) {
      EXPECT_EQ(p->rt.run_list.prev, prev) << "pid " << p->pid;
      EXPECT_TRUE(p->rt.on_rq) << "pid " << p->pid;
      EXPECT_EQ(p->prio, prio) << "pid " << p->pid;
      EXPECT_EQ(p->cpu, rq.cpu) << "pid " << p->pid;
      all.push_back(p);
      if (all.size() > rq.rt.rt_nr_running) break;  // a cycle
    }
    EXPECT_EQ(q.tail, prev) << "cpu " << rq.cpu << " prio " << prio;
  }
  EXPECT_EQ(all.size(), rq.rt.rt_nr_running) << "cpu " << rq.cpu;
  return all;
}

// Per CPU: busy + idle = elapsed, user + kernel = busy; overall: sum of task run time =
// sum of busy time; every task is current on at most one CPU and queued on at most one,
// its entity on its CPU's cfs_rq; the load-balancing view matches the runqueues.
inline void check_structure(const kernel::KernelImpl& k);

inline void check_invariants(const kernel::KernelImpl& k, sim::Time elapsed) {
  check_structure(k);
  uint64_t busy = 0, task_run = 0;
  for (int c = 0; c < k.nr_cpus(); ++c) {
    const kernel::rq& rq = k.cpu_rq(c);
    EXPECT_LE(rq.ex.busy_ns + rq.ex.irq_idle_ns, static_cast<uint64_t>(elapsed)) << "cpu " << c;
    EXPECT_EQ(rq.ex.user_ns, rq.ex.busy_ns - rq.ex.sys_ns) << "cpu " << c << " user time";
    busy += rq.ex.busy_ns;
  }
  for (const auto& t : k.tasks()) task_run += t->stats.run_ns;
  EXPECT_EQ(task_run, busy);
}

// What holds at any instant, mid-run too (the time accounts above are closed by finish()):
// the counts of each runqueue, the balancer's view, RT push/pull, the entity hierarchy.
inline void check_structure(const kernel::KernelImpl& k) {
  check_lb_view(k);
  check_sd_idle_next_balance(k);
  std::vector<std::vector<const kernel::task_struct*>> rt_lists;
  for (int c = 0; c < k.nr_cpus(); ++c) rt_lists.push_back(rt_queued(k.cpu_rq(c)));
  // RT push/pull bookkeeping: pushable = queued, not running, allowed on several CPUs.
  unsigned overloaded = 0;
  for (int c = 0; c < k.nr_cpus(); ++c) {
    const kernel::rq& rq = k.cpu_rq(c);
    unsigned pushable = 0;
    for (const kernel::task_struct* p : rt_lists[static_cast<size_t>(c)]) {
      pushable += p->rt.pushable;
      EXPECT_EQ(p->rt.pushable, p != rq.curr && p->nr_cpus_allowed > 1) << "pid " << p->pid;
    }
    EXPECT_EQ(rq.rt.rt_nr_pushable, pushable) << "cpu " << c;
    EXPECT_EQ(rq.rt.overloaded, pushable > 0) << "cpu " << c;
    overloaded += rq.rt.overloaded;
  }
  EXPECT_EQ(k.rto_count, overloaded);
  // cfs.h_nr_idle: the queued SCHED_IDLE tasks of the CPU and those below an idle group
  // (cpu.idle), delayed ones included.
  std::vector<unsigned> idle_queued(static_cast<size_t>(k.nr_cpus()), 0);
  for (const auto& t : k.tasks()) {
    bool idle = t->policy == SCHED_IDLE;
    for (const kernel::task_group* g = t->sched_task_group; g; g = g->parent) idle |= g->idle != 0;
    if (idle && t->se.on_rq) idle_queued[static_cast<size_t>(t->cpu)]++;
  }
  for (int c = 0; c < k.nr_cpus(); ++c)
    EXPECT_EQ(k.cpu_rq(c).cfs.h_nr_idle, idle_queued[static_cast<size_t>(c)]) << "cpu " << c;
  // rq->nr_running: the queued fair tasks (delayed ones included, throttled ones not) and RT.
  for (int c = 0; c < k.nr_cpus(); ++c) {
    const kernel::rq& rq = k.cpu_rq(c);
    EXPECT_EQ(rq.nr_running, rq.cfs.h_nr_queued + rq.rt.rt_nr_running) << "cpu " << c;
    EXPECT_LE(rq.cfs.h_nr_runnable, rq.cfs.h_nr_queued) << "cpu " << c;
  }
  // Each CPU's sleep timers: a heap by (hard expiry, arming order) whose tasks know their
  // place, each asleep with its timer armed for its hard expiry or after it (the interrupt's
  // delivery delay).
  for (int c = 0; c < k.nr_cpus(); ++c) {
    const auto& h = k.hrtimer_bases[static_cast<size_t>(c)].heap;
    for (size_t i = 0; i < h.size(); ++i) {
      const kernel::task_struct* p = h[i].p;
      EXPECT_EQ(p->hrtimer_pos, static_cast<int>(i)) << "cpu " << c;
      EXPECT_EQ(p->sleep_timer.arg, static_cast<uint32_t>(c)) << "pid " << p->pid;
      EXPECT_EQ(p->__state, kernel::TASK_INTERRUPTIBLE) << "pid " << p->pid;
      EXPECT_TRUE(p->sleep_timer.armed && p->sleep_timer.expires >= h[i].expires)
          << "pid " << p->pid;
      EXPECT_LE(h[i].softexpires, h[i].expires) << "pid " << p->pid;
      if (i > 0) {
        const auto& up = h[(i - 1) / 2];
        EXPECT_TRUE(up.expires < h[i].expires || (up.expires == h[i].expires && up.seq < h[i].seq))
            << "cpu " << c << " heap order at " << i;
      }
    }
  }
  for (const auto& t : k.tasks()) {
    if (t->hrtimer_pos < 0) {
      EXPECT_FALSE(t->sleep_timer.armed) << "pid " << t->pid << ": an armed sleep timer not queued";
    }
    int current_on = 0, queued_on = 0;
    for (int c = 0; c < k.nr_cpus(); ++c) {
      const kernel::rq& rq = k.cpu_rq(c);
      current_on += rq.curr == t.get();
      for (auto* q : rq.cfs.timeline) queued_on += q == &t->se;
      for (auto* q : rt_lists[static_cast<size_t>(c)]) queued_on += q == t.get();
    }
    EXPECT_LE(current_on, 1) << "pid " << t->pid;
    EXPECT_LE(queued_on, 1) << "pid " << t->pid;
    // The entity hierarchy: every task is on its group's cfs_rq of its own CPU, below the
    // group's entity there (none for the root group).
    const kernel::task_group* tg = t->sched_task_group;
    EXPECT_EQ(kernel::cfs_rq_of(&t->se), tg ? tg->cfs_rq[t->cpu] : &k.cpu_rq(t->cpu).cfs) << "pid " << t->pid;
    EXPECT_EQ(kernel::parent_entity(&t->se), tg ? tg->se[t->cpu] : nullptr) << "pid " << t->pid;
    if (current_on && t->sched_class != &kernel::rt_sched_class) {
      EXPECT_EQ(queued_on, 0);
    }
  }
}

// A task of `policy` (SCHED_NORMAL, SCHED_FIFO, SCHED_RR) allowed on `cpus`.
inline kernel::TaskAttr on(std::vector<int> cpus, int policy = SCHED_NORMAL, int rt_priority = 0) {
  kernel::TaskAttr a;
  a.policy = policy;
  a.rt_priority = rt_priority;
  a.cpus = std::move(cpus);
  return a;
}

// Counts a CPU's irq_handler_entry records from a time on (the local timer's vector too
// unless `timers` is false).
struct IrqCounter : kernel::TraceSink {
  int cpu = 0;
  sim::Time from = INT64_MAX;
  bool timers = true;
  int irqs = 0;
  void record(const kernel::TraceRecord& r) override {
    irqs += r.type == kernel::TraceEvent::irq_handler_entry && r.cpu == cpu && r.ts >= from &&
            (timers || r.irq != kernel::kIrqLocalTimer);
  }
};

// A futex wakeup from CPU 0 at 1 ms of a thread waiting on CPU 1, idle by then: the waker's
// cost, the time from the wake to the wakee running, and CPU 1's interrupts from the wake on.
struct IdleWakeup {
  sim::Time waker_cost = 0, wake_to_run = 0;
  int target_irqs = 0;
  int target_ipis = 0;  // of those, the interrupts other than its local timer's
};
// `latency_us` >= 0: a /dev/cpu_dma_latency request for the run.
inline IdleWakeup wake_an_idle_cpu(const hw::Machine& m, const kernel::KernelConfig& cfg,
                                   int latency_us = -1) {
  Sim s(m, cfg);
  if (latency_us >= 0) s.k->cpu_latency_qos_add_request(latency_us);
  struct Both : kernel::TraceSink {
    IrqCounter all, ipis;
    void record(const kernel::TraceRecord& r) override {
      all.record(r);
      ipis.record(r);
    }
  } sink;
  IrqCounter& irqs = sink.all;
  irqs.cpu = sink.ipis.cpu = 1;
  sink.ipis.timers = false;
  s.k->set_trace_sink(&sink);
  kernel::UserWord w;
  sim::Time before = 0, after = 0, woke = 0;
  s.spawn(on({1}), [&](user::Thread& t) -> user::Program {
    co_await t.futex_wait(&w, 0);
    woke = t.now();
  });
  s.spawn(on({0}), [&](user::Thread& t) -> user::Program {
    co_await t.nanosleep(sim::kNsecPerMsec);  // CPU 1 idles by then
    before = t.now();
    irqs.from = sink.ipis.from = before;
    co_await t.futex_wake(&w, 1);
    after = t.now();
  });
  s.run(5 * sim::kNsecPerMsec);
  return IdleWakeup{after - before, woke - before, irqs.irqs, sink.ipis.irqs};
}

}  // namespace testing_support
