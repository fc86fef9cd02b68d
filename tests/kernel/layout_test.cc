// Where the kernel's per-CPU and per-task state lies in memory (a wide machine's events each
// find their CPU's rq and running task cold in the cache): every rq and task_struct starts a
// cache line, and the tasks lie one after the other in the arena's blocks, in 2 MB huge-page
// blocks on a machine whose rqs take huge pages.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

#include "kernel/kernel_impl.h"
#include "tests/kernel/harness.h"

namespace {

uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(Layout, EveryRqAndTaskStartsACacheLine) {
  testing_support::Sim sim(testing_support::flat_machine(6));
  for (int i = 0; i < 10; ++i)
    sim.spawn(kernel::TaskAttr{}, [](user::Thread& t) -> user::Program { co_await t.compute(1000); });
  sim.run(sim::kNsecPerMsec);
  for (int cpu = 0; cpu < sim.k->nr_cpus(); ++cpu) {
    EXPECT_EQ(addr(&sim.k->cpu_rq(cpu)) % 64, 0u) << "rq of CPU " << cpu;
    EXPECT_EQ(addr(sim.k->cpu_rq(cpu).idle) % 64, 0u) << "idle task of CPU " << cpu;
  }
  for (const auto& p : sim.k->tasks()) EXPECT_EQ(addr(p.get()) % 64, 0u) << p->comm;
}

// What the newly-idle balance and the periodic walk over the domains read of each domain
// (the balance timing and the newly-idle statistics) is its first cache line, and every
// domain starts one.
TEST(Layout, ADomainsBalanceTimingIsItsFirstCacheLine) {
  using kernel::sched_domain;
  EXPECT_EQ(alignof(sched_domain), 64u);
  for (size_t end : {offsetof(sched_domain, last_balance) + 8, offsetof(sched_domain, max_newidle_lb_cost) + 8,
                     offsetof(sched_domain, last_decay_max_lb_cost) + 8, offsetof(sched_domain, balance_interval) + 4,
                     offsetof(sched_domain, busy_factor) + 4, offsetof(sched_domain, min_interval) + 4,
                     offsetof(sched_domain, max_interval) + 4, offsetof(sched_domain, span_weight) + 4,
                     offsetof(sched_domain, nr_balance_failed) + 4, offsetof(sched_domain, newidle_ratio) + 4})
    EXPECT_LE(end, 64u);
}

// A CPU going idle and coming back (cpu_switch(), the newly-idle quick path) reads and writes
// these rq fields: one cache line of the rq.
TEST(Layout, TheRqsIdleEntryAndExitFieldsShareACacheLine) {
  using kernel::rq;
  const size_t line = offsetof(rq, idle_stamp) / 64;
  EXPECT_EQ((offsetof(rq, avg_idle) + 7) / 64, line);
  EXPECT_EQ((offsetof(rq, max_idle_balance_cost) + 7) / 64, line);
  EXPECT_EQ((offsetof(rq, sd_idle_next_balance) + 7) / 64, line);
  EXPECT_EQ((offsetof(rq, sd) + sizeof(rq::sd) - 1) / 64, line);
}

// An RT enqueue or dequeue (enqueue_task_rt(), dequeue_task_rt()) reads the task's prio and
// writes its run_list and on_rq: one cache line of the task.
TEST(Layout, ATasksPrioAndSchedRtEntityShareACacheLine) {
  using kernel::task_struct;
  const size_t line = offsetof(task_struct, prio) / 64;
  EXPECT_EQ(offsetof(task_struct, rt) / 64, line);
  EXPECT_EQ((offsetof(task_struct, rt) + sizeof(task_struct::rt) - 1) / 64, line);
}

// An RT switch and an RT wakeup on a wide machine find the task cold: set_next_task_rt() and
// update_curr_rt() use se's run-time accounting, try_to_wake_up() tests exited, and the
// enqueue reads prio and writes run_list. One cache line of the task.
TEST(Layout, ATasksRtSwitchAndWakeupFieldsShareACacheLine) {
  using kernel::task_struct;
  using kernel::sched_entity;
  const size_t line = offsetof(task_struct, prio) / 64;
  EXPECT_EQ(offsetof(task_struct, exited) / 64, line);
  const size_t se = offsetof(task_struct, se);
  EXPECT_EQ((se + offsetof(sched_entity, exec_start)) / 64, line);
  EXPECT_EQ((se + offsetof(sched_entity, sum_exec_runtime)) / 64, line);
  EXPECT_EQ((se + offsetof(sched_entity, prev_sum_exec_runtime) + 7) / 64, line);
}

// A wakeup and a switch update the task's statistics (wait_start at the enqueue, the wait
// and run sums at the switch, nr_wakeups, nr_syscalls): its first two lines, from a line
// start. The sleep timer, nr_cpus_allowed and the affinity mask's words pointer (what a
// wakeup's select_task_rq() reads) share the line after them.
TEST(Layout, ATasksStatisticsAndWakeupFieldsTakeThreeCacheLines) {
  using kernel::task_struct;
  using kernel::task_stats;
  const size_t stats = offsetof(task_struct, stats);
  EXPECT_EQ(stats % 64, 0u);
  EXPECT_LE(offsetof(task_stats, lhp_since) + 8, 128u);
  EXPECT_LE(offsetof(task_stats, nr_syscalls) + 8, 128u);
  EXPECT_LE(offsetof(task_stats, nr_wakeups) + 8, 128u);
  const size_t line = stats / 64 + 2;
  EXPECT_EQ(offsetof(task_struct, sleep_timer) / 64, line);
  EXPECT_EQ((offsetof(task_struct, sleep_timer) + sizeof(task_struct::sleep_timer) - 1) / 64, line);
  EXPECT_EQ(offsetof(task_struct, nr_cpus_allowed) / 64, line);
  EXPECT_EQ((offsetof(task_struct, cpus_mask) + 7) / 64, line);
}

// What every event reads of its CPU's rq besides the first line, grouped by cache line:
// the kernel entry and exit accounting; the resume timer and wake list; the tick timer and
// the mode flags; the interrupt jitter draws with the fair server's switch-time fields; the
// RT counts and bitmap with softirq's pending, hardirq and irq time. And __schedule()'s
// active-balance test is in the first line, with curr.
TEST(Layout, TheRqsPerEventFieldsArePackedIntoFewCacheLines) {
  using kernel::rq;
  using kernel::cpu_exec;
  using kernel::dl_server;
  EXPECT_EQ(offsetof(rq, active_balance) / 64, offsetof(rq, curr) / 64);
  const size_t ex = offsetof(rq, ex);
  EXPECT_EQ(ex % 64, 0u);
  auto line_of = [](size_t off, size_t size) {
    EXPECT_EQ(off / 64, (off + size - 1) / 64) << "split over two lines at " << off;
    return off / 64;
  };
  const size_t acct = line_of(ex + offsetof(cpu_exec, kwork_until), 8);
  EXPECT_EQ(line_of(ex + offsetof(cpu_exec, busy_ns), 8), acct);
  EXPECT_EQ(line_of(ex + offsetof(cpu_exec, sys_ns), 8), acct);
  const size_t resume = line_of(ex + offsetof(cpu_exec, resume_timer), sizeof(kernel::cpu_exec::resume_timer));
  EXPECT_EQ(line_of(ex + offsetof(cpu_exec, wake_list), sizeof(kernel::cpu_exec::wake_list)), resume);
  const size_t tick = line_of(ex + offsetof(cpu_exec, tick_timer), sizeof(kernel::cpu_exec::tick_timer));
  EXPECT_EQ(line_of(ex + offsetof(cpu_exec, in_user), 1), tick);
  EXPECT_EQ(line_of(ex + offsetof(cpu_exec, sibling_busy), 1), tick);
  EXPECT_EQ(line_of(ex + offsetof(cpu_exec, zero_time_steps), 4), tick);
  const size_t jitter = line_of(ex + offsetof(cpu_exec, irq_rng), sizeof(kernel::cpu_exec::irq_rng));
  const size_t fs = offsetof(rq, fair_server);
  EXPECT_EQ(line_of(fs + offsetof(dl_server, active), 1), jitter);
  EXPECT_EQ(line_of(fs + offsetof(dl_server, defer_running), 1), jitter);
  EXPECT_EQ(line_of(fs + offsetof(dl_server, timer) + offsetof(sim::Timer, armed), 1), jitter);
  const size_t rt = offsetof(rq, rt);
  const size_t counts = line_of(rt + offsetof(kernel::rt_rq, active) + offsetof(kernel::rt_prio_array, bitmap),
                                sizeof(kernel::rt_prio_array::bitmap));
  EXPECT_EQ(line_of(rt + offsetof(kernel::rt_rq, rt_nr_running), 4), counts);
  EXPECT_EQ(line_of(rt + offsetof(kernel::rt_rq, highest_prio), 4), counts);
  EXPECT_EQ(line_of(rt + offsetof(kernel::rt_rq, overloaded), 1), counts);
  const size_t si = offsetof(rq, softirq);
  EXPECT_EQ(line_of(si + offsetof(kernel::softirq_cpu, pending), 4), counts);
  EXPECT_EQ(line_of(si + offsetof(kernel::softirq_cpu, hardirq), 4), counts);
  EXPECT_EQ(line_of(si + offsetof(kernel::softirq_cpu, irq_time), 8), counts);
}

// lb_view, which lb_view_update() writes on nearly every event and idle-CPU searches scan:
// 32 bytes a CPU, aligned, so no entry is split over two cache lines.
TEST(Layout, EveryLbViewEntryLiesInOneCacheLine) {
  testing_support::Sim sim(testing_support::flat_machine(6));
  EXPECT_EQ(sizeof(kernel::lb_cpu), 32u);
  for (const kernel::lb_cpu& v : sim.k->lb_view) EXPECT_EQ(addr(&v) % 32, 0u);
}

// The group sums lb_view_update() adds to: each one cache line.
TEST(Layout, EveryLbSumIsOneCacheLine) {
  testing_support::Sim sim(testing_support::flat_machine(6));
  EXPECT_EQ(sizeof(kernel::lb_sum), 64u);
  for (const auto& sums : sim.k->lb_sums)
    for (const kernel::lb_sum& s : sums) EXPECT_EQ(addr(&s) % 64, 0u);
}

TEST(TaskArena, TasksLieOneAfterTheOtherInBlocksGrowingFrom64) {
  kernel::TaskArena arena;
  std::vector<kernel::TaskArena::Ptr> tasks;
  for (int i = 0; i < 64 + 128 + 1; ++i) tasks.push_back(arena.alloc());
  for (int i = 1; i < 64; ++i) EXPECT_EQ(tasks[i].get(), tasks[i - 1].get() + 1) << i;
  for (int i = 65; i < 64 + 128; ++i) EXPECT_EQ(tasks[i].get(), tasks[i - 1].get() + 1) << i;
  EXPECT_NE(tasks[64].get(), tasks[63].get() + 1) << "the second block starts after 64 tasks";
  EXPECT_NE(tasks[192].get(), tasks[191].get() + 1) << "the third block starts after 128 more";
  for (const auto& p : tasks) EXPECT_EQ(p->pid, 0) << "default-constructed";
}

TEST(TaskArena, AHugeArenaPlacesTasksIn2MbAlignedBlocks) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  constexpr size_t per_block = kHuge / sizeof(kernel::task_struct);
  kernel::TaskArena arena;
  arena.init(true);
  std::vector<kernel::TaskArena::Ptr> tasks;
  for (size_t i = 0; i < 2 * per_block + 1; ++i) tasks.push_back(arena.alloc());
  std::set<uintptr_t> blocks;
  for (size_t i = 0; i < tasks.size(); ++i) {
    blocks.insert(addr(tasks[i].get()) / kHuge);
    if (i % per_block == 0) EXPECT_EQ(addr(tasks[i].get()) % kHuge, 0u) << "block start " << i;
    else EXPECT_EQ(tasks[i].get(), tasks[i - 1].get() + 1) << i;
  }
  EXPECT_EQ(blocks.size(), 3u);
}

// On a machine whose rqs fill huge pages (about 560 CPUs and more), the tasks, idle tasks
// first, are in huge-page blocks from the first.
TEST(TaskArena, AWideMachinesIdleTasksStartAHugePageBlock) {
  testing_support::Sim wide(testing_support::flat_machine(1024));
  EXPECT_EQ(addr(wide.k->cpu_rq(0).idle) % (uintptr_t{2} << 20), 0u);
  EXPECT_EQ(wide.k->cpu_rq(1).idle, wide.k->cpu_rq(0).idle + 1);
}

}  // namespace
