// Scheduler internal types, mirroring kernel/sched/sched.h and include/linux/sched.h
// (v6.12 .. v7.0): task_struct, sched_entity, cfs_rq, rt_rq, rq and struct sched_class.
// Owned by the KernelImpl object; mutated only from kernel/ on the engine's single thread.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernel/config.h"
#include "kernel/interrupt.h"
#include "kernel/sched/cpumask.h"
#include "kernel/sched/fair_bandwidth.h"
#include "kernel/sched/mm_cid.h"
#include "kernel/sched/sched_entity.h"
#include "kernel/sched/slice_ext_task.h"
#include "kernel/sched/stats.h"
#include "kernel/uapi.h"
#include "sim/engine.h"
#include "sim/rng.h"
#include "kernel/sched/topology.h"  // lb_cpu, lb_sum, sched_domain

namespace hw { struct Machine; }

namespace kernel {

class KernelImpl;
struct rq;
struct cfs_rq;
struct task_struct;
struct sched_domain;
struct task_group;

inline constexpr int MAX_RT_PRIO = 100;
inline constexpr int DEFAULT_PRIO = 120;
inline constexpr unsigned long WEIGHT_IDLEPRIO = 3;
inline constexpr unsigned long MIN_SHARES = 2;     // a group entity's least weight
inline constexpr unsigned long MAX_SHARES = 1ul << 18;
inline constexpr uint32_t WMULT_IDLEPRIO = 1431655765;

inline constexpr unsigned TASK_RUNNING = 0;
inline constexpr unsigned TASK_INTERRUPTIBLE = 1;
inline constexpr unsigned TASK_DEAD = 0x80;
inline constexpr unsigned TASK_WAKING = 0x200;

// Thread-info flags (include/linux/thread_info.h): the two need-resched bits of 6.13+.
enum : unsigned { TIF_NEED_RESCHED = 1u << 0, TIF_NEED_RESCHED_LAZY = 1u << 1 };

// enqueue/dequeue flags (kernel/sched/sched.h).
enum : int {
  DEQUEUE_SLEEP = 0x01,
  DEQUEUE_SAVE = 0x02,
  DEQUEUE_MIGRATING = 0x100,
  DEQUEUE_DELAYED = 0x200,
  DEQUEUE_SPECIAL = 0x400,
  ENQUEUE_WAKEUP = 0x01,
  ENQUEUE_RESTORE = 0x02,
  ENQUEUE_HEAD = 0x10,
  ENQUEUE_MIGRATED = 0x40,
  ENQUEUE_INITIAL = 0x80,
  ENQUEUE_DELAYED = 0x200,
};
// wake flags (WF_*).
enum : int { WF_EXEC = 0x02, WF_FORK = 0x04, WF_TTWU = 0x08, WF_SYNC = 0x10, WF_MIGRATED = 0x20,
             WF_RQ_SELECTED = 0x80 };  // WF_RQ_SELECTED: ->select_task_rq() ran (6.13+)

// Where the task's CPU is in its program when it is not running user code: what
// the simulated CPU resumes when the task is next current. Simulator-only.
enum class ExecKind : uint8_t {
  Start,        // program not yet started
  Compute,      // user work left: exec_remaining_ns
  Spin,         // spinning in user mode while *spin_word == spin_val
  SyscallRet,   // returning from a syscall with syscall_ret
  SyscallEntry, // rescheduled at syscall entry; runs pending_syscall's handler when back
  Dead,
  Kthread,      // a kernel thread: its thread function (task_struct::kthread_fn) runs when it is current
};

struct mm_struct;

struct alignas(64) task_struct {
  // Fields are ordered hot first, and the struct starts a cache line: a tick or switch on a
  // wide machine finds the running task cold in the cache, so what the tick, the switch and
  // the return to user read (the simulated CPU state, flags, class, group, mm_cid, prio, rt,
  // se, the slice-extension flags and the run/wait statistics) is packed into the first lines, and
  // what only creation, wakeups, sleeps and reports read comes last.
  // Simulated CPU state of this task (valid when it is not running user code).
  ExecKind exec = ExecKind::Start;
  bool on_cpu = false;
  bool on_rq = false;                // TASK_ON_RQ_QUEUED (includes sched_delayed)
  bool is_idle = false;              // the per-CPU idle task (swapper)
  bool on_rq_migrating = false;      // TASK_ON_RQ_MIGRATING: moved queued, between two rqs
  // CONFIG_CFS_BANDWIDTH, 6.18+: throttle_cfs_rq_work() is queued (sched_throttle_work) / has
  // dequeued the task into its runqueue's throttled_limbo_list (p->throttled).
  bool sched_throttle_work = false, throttled = false;
  // latency_sensi_flag patch: sched_setattr(SCHED_FLAG_LATENCY_SENSITIVE) set it; a
  // local_bh_enable() of this task wakes ksoftirqd instead of running softirqs.
  bool latency_sensi_flag = false;
  unsigned thread_flags = 0;         // TIF_*
  int cpu = 0;                       // task_cpu(): the rq it is on or last ran on
  unsigned __state = 0;              // TASK_RUNNING (0) or TASK_INTERRUPTIBLE
  int policy = SCHED_NORMAL;
  s64 exec_remaining_ns = 0;
  UserContext* user = nullptr;       // the program (owned by KernelImpl)
  KernelImpl* kern = nullptr;
  const struct sched_class* sched_class = nullptr;
  // task_group(p): the task's group, nullptr for the root group (kernel/sched/group.cc).
  task_group* sched_task_group = nullptr;
  mm_struct* mm = nullptr;
  UserWord* spin_word = nullptr;
  int64_t spin_val = 0;
  task_struct* spin_next = nullptr;  // intrusive list of spinners on spin_word
  task_struct* spin_prev = nullptr;
  int64_t syscall_ret = 0;
  mm_cid_task mm_cid;                // rseq concurrency ID (kernel/sched/mm_cid.h)
  int prio = DEFAULT_PRIO;           // effective: 99 - rt_priority for RT, 120 + nice for fair
  bool exited = false;
  // Simulator-only: blocked in a syscall whose handler is done; its exit path
  // (syscall_exit_to_user_mode(), syscall_exit_ns) runs when it is back on a CPU.
  bool syscall_exit_pending = false;
  // With prio in one cache line: an RT enqueue or dequeue reads prio and writes run_list,
  // a wakeup tests exited, and an RT switch sets se's exec_start (se's run-time accounting
  // comes first in it).
  sched_rt_entity rt;
  sched_entity se;
  int rt_priority = 0;
  int nice = 0;
  slice_ext_task slice;
  int recent_used_cpu = -1;
  int last_wakee_pid = -1;
  unsigned wakee_flips = 0;
  bool sched_remote_wakeup = false;  // queued on a wake list after a migrating wakeup
  u64 wakee_flip_decay_ts = 0;
  // From a line start: a wakeup and a switch update the first two lines of the statistics.
  alignas(64) task_stats stats;
  // In the line after them: a sleep's timer, and what a wakeup's select_task_rq() reads of
  // the affinity (the mask's words pointer).
  sim::Timer sleep_timer;            // hrtimer of nanosleep
  int hrtimer_pos = -1;              // its place in its CPU's hrtimer_sleeper_base, -1 if none
  int nr_cpus_allowed = 0;
  cpumask cpus_mask;                 // allowed CPUs (1 KB at 8192 CPUs)
  int pid = 0;
  int tgid = 0;
  std::string comm;
  task_struct* futex_next = nullptr; // futex wait queue link
  UserWord* futex_word = nullptr;
  UserWord* clear_child_tid = nullptr;  // set_tid_address(): zeroed and woken in mm_release()
  UserAction pending_syscall;        // valid iff exec == SyscallEntry
  void (*kthread_fn)(rq* rq, task_struct* p) = nullptr;  // exec == Kthread: its loop body
  // A kernel section this task runs with preemption enabled (task work), as the CPU's kernel
  // work from preemptible_from to preemptible_to; and what an interrupt preempted of one,
  // still to run when the task is next current (kernel/cpu_exec.cc).
  sim::Time preemptible_from = 0, preemptible_to = 0;
  sim::Time kwork_left = 0;
};

// An entity in the fair runqueue "tree". The kernel's augmented rb-tree becomes a flat
// array here: runqueues hold few entities, and the pick result is the same (the eligible
// entity with the earliest deadline, ties to the earlier insertion). docs/model.md.
struct cfs_rq {
  // Hot first: what update_curr(), the tick, the pick and PELT read, then the group and
  // bandwidth state that only task groups use.
  struct rq* rq = nullptr;     // the rq this cfs_rq belongs to (rq_of())
  unsigned long load = 0;      // sum of weights of queued entities (incl. curr)
  unsigned nr_queued = 0;      // incl. curr and delayed entities
  unsigned h_nr_runnable = 0;  // excludes delayed entities
  unsigned h_nr_idle = 0;      // queued SCHED_IDLE tasks and tasks below idle groups, delayed ones included
  unsigned h_nr_queued = 0;    // queued tasks in this hierarchy, delayed ones included
  s64 sum_w_vruntime = 0;      // sum of w_i * (v_i - zero_vruntime) over tree entities
  s64 sum_weight = 0;          // sum of w_i over tree entities
  u64 zero_vruntime = 0;       // reference point of the sum (7.0 name; min_vruntime before)
  sched_entity* curr = nullptr;
  sched_entity* next = nullptr;  // the next buddy (NEXT_BUDDY), picked first while eligible
  std::vector<sched_entity*> timeline;  // queued entities except curr
  u64 tree_seq = 0;
  // CONFIG_FAIR_GROUP_SCHED: the group this runqueue belongs to (nullptr: the root group).
  task_group* tg = nullptr;
  // CONFIG_CFS_BANDWIDTH (kernel/sched/fair_bandwidth.cc): runtime drawn from the group's pool
  // is accounted while runtime_enabled; throttled state, throttled ancestors + self; queued
  // on its rq's cfsb_csd_list for an unthrottle on its own CPU (throttled_csd_list).
  // pelt_clock_throttled: the runqueue's PELT clock stands still (cfs_rq_clock_pelt()).
  // (`propagate`, below, lies here too, to keep struct rq within its lines.)
  bool runtime_enabled = false, throttled = false, csd_queued = false;
  bool pelt_clock_throttled = false, propagate = false;
  int throttle_count = 0;
  int idle = 0;  // an idle group's runqueue (sched_group_set_idle(), cfs_rq_is_idle())
  // CONFIG_CFS_BANDWIDTH: rq_clock_pelt() when the PELT clock stopped, and the time it stood
  // still in all (cfs_rq_clock_pelt()).
  u64 throttled_clock_pelt = 0, throttled_clock_pelt_time = 0;
  sched_avg avg;               // PELT of the runqueue: blocked entities decay inside it
  // Load of entities that left this runqueue from another CPU (a wakeup elsewhere, an exit),
  // taken out at its next update_cfs_rq_load_avg().
  struct {
    int nr = 0;
    unsigned long load_avg = 0, util_avg = 0, runnable_avg = 0;
  } removed;
  // CONFIG_FAIR_GROUP_SCHED: this runqueue's last contribution to tg->load_avg
  // (update_tg_load_avg(), at most once per ms), and the PELT change to push to the group's
  // entity (add_tg_cfs_propagate(): `propagate`, above, and prop_runnable_sum).
  long tg_load_avg_contrib = 0;
  u64 last_update_tg_load_avg = 0;
  long prop_runnable_sum = 0;
  // CONFIG_CFS_BANDWIDTH: runtime drawn and not yet used (ns), when throttled, and 6.18+'s limbo.
  s64 runtime_remaining = 0;
  u64 throttled_clock = 0;
  std::vector<task_struct*> throttled_limbo_list;
};

// struct task_group (kernel/sched/sched.h, CONFIG_FAIR_GROUP_SCHED): a group of tasks
// scheduled as one entity per CPU in its parent's runqueue there. The root group is the
// rqs' own cfs (its se[] are nullptr); every other group is created by
// KernelImpl::create_task_group() and owns a cfs_rq and a sched_entity per CPU.
struct task_group {
  int id = 0;                         // 0 = root
  std::string path;                   // "/" for the root, else an absolute cgroup path
  task_group* parent = nullptr;
  unsigned long shares = NICE_0_LOAD; // tg->shares, scale_load_down()'d (cpu.weight 100)
  long load_avg = 0;                  // tg->load_avg: sum of the cfs_rqs' tg_load_avg_contrib
  std::vector<struct cfs_rq*> cfs_rq; // per CPU
  std::vector<sched_entity*> se;      // per CPU; nullptr for the root
  // Simulator-only: the storage of the above, and what the group's tasks ran (ns; the
  // task's own group only: readers sum the children for cpu.stat's hierarchical usage).
  std::vector<struct cfs_rq> cfs_rq_store;
  std::vector<sched_entity> se_store;
  u64 usage_ns = 0;
  struct cfs_bandwidth cfs_bandwidth;  // cpu.max (kernel/sched/fair_bandwidth.cc)
  int idle = 0;  // cgroup v2 cpu.idle (tg->idle; kernel/cgroup.cc)
  // cpuset.cpus (empty: not set) and cpuset.cpus.effective, one byte per CPU (kernel/cgroup.cc).
  std::vector<uint8_t> cpus_allowed;
  std::vector<uint8_t> effective_cpus;
};

// struct rt_prio_array: a list of queued tasks per priority (FIFO; the running task stays
// queued) and a bitmap of the non-empty ones. Linux's list_head is circular through the rq;
// here the rq holds each list's first and last task and the tasks' run_list links them.
struct rt_prio_list {
  task_struct* head = nullptr;
  task_struct* tail = nullptr;
};

struct rt_prio_array {
  std::array<rt_prio_list, MAX_RT_PRIO> queue;
  std::array<uint64_t, 2> bitmap{};
};

struct rt_rq {
  // The queues first and the counts last: in struct rq the counts, which every pick reads,
  // then share a cache line with the softirq state that follows.
  rt_prio_array active;
  unsigned rt_nr_running = 0;
  int highest_prio = MAX_RT_PRIO;
  unsigned rt_nr_pushable = 0;  // tasks marked sched_rt_entity::pushable
  bool overloaded = false;      // has pushable tasks (a bit of the root domain's rto_mask)
};

// struct sched_class: the operations of one scheduling class, in priority order rt > fair > idle.
struct sched_class {
  const char* name;
  // activate_task/ttwu/migration; rq current.
  void (*enqueue_task)(rq* rq, task_struct* p, int flags);
  // deactivate_task/__schedule (block)/migration. Returns false if the task stays queued
  // (fair DELAY_DEQUEUE).
  bool (*dequeue_task)(rq* rq, task_struct* p, int flags);
  // do_sched_yield; p == rq->curr.
  void (*yield_task)(rq* rq);
  // wakeup_preempt() for a wakee of this class while curr is of this class.
  void (*wakeup_preempt)(rq* rq, task_struct* p, int flags);
  // pick_next_task: the next task of this class or nullptr. May dequeue delayed entities.
  task_struct* (*pick_task)(rq* rq);
  void (*put_prev_task)(rq* rq, task_struct* p);
  void (*set_next_task)(rq* rq, task_struct* p, bool first);
  // try_to_wake_up/wake_up_new_task: the CPU to run p on.
  int (*select_task_rq)(KernelImpl* k, task_struct* p, int prev_cpu, int wake_flags, int waker_cpu);
  // sched_tick (queued = 0) and hrtick (queued = 1); p == rq->curr.
  void (*task_tick)(rq* rq, task_struct* p, int queued);
  void (*update_curr)(rq* rq);
  // After a wakeup enqueued p on rq (RT: push it on if it cannot run here soon).
  void (*task_woken)(rq* rq, task_struct* p) = nullptr;
  // Before picking, with prev no longer current-to-be (RT: pull if this rq's priority drops).
  void (*balance)(rq* rq, task_struct* prev) = nullptr;
  // set_task_cpu() to another CPU (fair: PELT leaves the old runqueue).
  void (*migrate_task_rq)(task_struct* p, int new_cpu) = nullptr;
  // The task exited and was switched out for good (fair: its PELT leaves the runqueue).
  void (*task_dead)(task_struct* p) = nullptr;
  // set_load_weight(p, true): p's weight changes (fair: reweight_task_fair()).
  void (*reweight_task)(rq* rq, task_struct* p, const load_weight* lw) = nullptr;
  // After a priority (nice) change of p on rq: preempt or be preempted if it now must.
  void (*prio_changed)(rq* rq, task_struct* p, int oldprio) = nullptr;
};

extern const sched_class rt_sched_class;
extern const sched_class fair_sched_class;
extern const sched_class idle_sched_class;

// Simulated CPU mode (what the hardware thread is doing), beside the Linux rq state.
struct cpu_exec {
  // Laid out by cache line (rq places it at a line start): an event on a wide machine finds
  // its CPU's state cold, so what every event touches is packed into the first three lines
  // and the last half line, and the timers only some configurations use lie between.
  // Line 0: the mode's times and the accounting every kernel entry and exit updates.
  sim::Time kwork_until = 0;   // kernel work in progress until then (entry, handler, switch)
  sim::Time user_since = 0;    // user code of curr (re)started at this time
  sim::Time tick_expires = 0;  // the tick's expiry on its grid (the interrupt may come later)
  // Accounting (ns).
  u64 user_ns = 0, sys_ns = 0, irq_idle_ns = 0;
  u64 busy_since = 0;          // valid while curr != idle
  u64 busy_ns = 0;             // closed intervals with a task current
  // Line 1: curr reaches its next program step; lb_view_update() reads the wake list.
  sim::Timer resume_timer;
  std::vector<task_struct*> wake_list;  // ttwu_queue_wakelist entries
  // Line 2: the periodic tick (stopped when idle under NO_HZ) and the mode flags.
  sim::Timer tick_timer;
  bool in_user = false;        // curr is executing user code since user_since
  bool sibling_busy = false;   // SMT sibling has a task current (user work runs slower)
  uint32_t zero_time_steps = 0;  // program steps run without time passing (livelock guard)
  unsigned ipi_pending = 0; bool ipi_polled = false;  // IPI_* bits; all seen by polling
  sim::Time idle_exit_until = -1;  // an interrupt woke the idle CPU: its idle state ends then
  // Lines 3 and 4: per-rq hrtick, the earliest pending IPI arrival, and 7.0's per-CPU slice
  // extension timer (hrtick for RFC/2023) with the task it was armed for.
  sim::Timer hrtick_timer, ipi_timer, slice_timer;
  task_struct* slice_cookie = nullptr;
  // Line 5, first half: this CPU's timer interrupt jitter draws (every hrtimer_start());
  // rq->fair_server's hot fields take the second half.
  alignas(32) sim::Rng irq_rng;
};

enum : unsigned {
  IPI_RESCHEDULE = 1u << 0,
  IPI_CALL_FUNC = 1u << 1,
  IPI_NOHZ_KICK = 1u << 2,
  IPI_RT_PUSH = 1u << 3,  // the root domain's rto_push_work irq_work
  IPI_CPU_STOP = 1u << 4, // stop_one_cpu_nowait(): wake this CPU's stopper (active balance)
  IPI_CFSB_CSD = 1u << 5, // rq->cfsb_csd: runqueues to unthrottle here (__cfsb_csd_unthrottle())
};

// The fair deadline server (6.12+, rq->fair_server, a deferred sched_dl_entity in deadline.c):
// fair tasks starved by RT get `fair_server_runtime_ns` per `fair_server_period_ns`, at the
// period's end (zero laxity). What every switch reads comes first, in half a line of rq.
// Queued as a deadline entity (above RT) while active and not throttled.
struct dl_server {
  bool active = false;         // dl_server_active(): started, fair tasks are runnable
  bool defer_running = false;  // dl_defer_running: runs at once, without waiting for zero laxity
  bool dl_throttled = false;   // not queued: waits for its timer (zero laxity or replenishment)
  bool dl_defer_idle = false;  // 7.0: idle used up a waiting budget; the timer stops it
  sim::Timer timer;            // dl_se->dl_timer: zero-laxity instant or replenishment
  s64 runtime = 0;             // left in this period (dl_se->runtime)
  u64 deadline = 0;            // end of this period (dl_se->deadline)
};

struct alignas(64) rq {
  // Every CPU's rq starts a cache line (Linux's runqueues are ____cacheline_aligned per CPU)
  // and its fields are ordered by use: on a wide machine an event finds its CPU's rq cold in
  // the cache, so what the tick, the switch and the kernel entry and exit touch (the scalars
  // below, cfs, ex, the fair server's state, rt's counts and softirq's) is packed into the
  // first lines (rt's queues apart), and the idle and balancing state follows.
  int cpu = 0;
  int smt_sibling = -1;        // the other hardware thread of this core, or -1
  KernelImpl* k = nullptr;
  task_struct* curr = nullptr;
  task_struct* idle = nullptr;
  unsigned nr_running = 0;
  bool resched_by_rt = false;  // the pending reschedule was raised by a higher-class wakeup
  bool active_balance = false; // an active balance is queued on this CPU's stopper (__schedule())
  bool preempt_need_resched = false;  // x86: folded into preempt_count (see __resched_curr())
  bool nohz_newilb_kick = false;  // NOHZ_NEWILB_KICK: refresh idle CPUs' blocked load at do_idle()
  u64 clock = 0;               // rq_clock(): the engine's now at the last update
  u64 clock_task = 0;          // rq_clock_task(): clock less irq time (IRQ_TIME_ACCOUNTING)
  u64 prev_irq_time = 0;       // irq time already taken out of clock_task
  u64 next_balance = 0;        // jiffies
  u64 nr_switches = 0;
  cfs_rq cfs;
  // ex from a line start: its lines 0-2 and the first half of line 5 are hot, and the fair
  // server's hot fields fill the second half of that line.
  alignas(64) cpu_exec ex;
  dl_server fair_server;
  u64 last_blocked_load_update_tick = 0;  // jiffies
  // rt from a line start: its queues fill 25 lines exactly, so its counts and bitmap and
  // softirq's pending, hardirq and irq_time (what every event reads) share the next line.
  alignas(64) rt_rq rt;
  softirq_cpu softirq;
  // What a CPU going idle and coming back reads and writes (cpu_switch(), the newly-idle
  // balance's quick path), in one cache line of their own (56 bytes), wherever the fields
  // above end.
  alignas(64) u64 idle_stamp = 0;
  u64 avg_idle = 1000000;      // EWMA of idle durations, ns (2 x migration cost at boot)
  // The dearest newly-idle balance pass (all its domains) seen, or the sum of the domains'
  // max_newidle_lb_cost at their decay, never below sysctl_sched_migration_cost; avg_idle
  // is capped at twice this.
  u64 max_idle_balance_cost = 500000;
  // Simulator-only: sd[0].last_balance + get_sd_balance_interval(sd[0], 0), the lowest
  // domain's update_next_balance() for an idle CPU, kept by sd_idle_next_balance_update()
  // (fair_balance.h) wherever either changes, so that a CPU going idle with no overloaded
  // CPU to pull from (the newly-idle quick path) need not read its domain.
  u64 sd_idle_next_balance = 0;
  std::vector<sched_domain> sd;  // bottom-up
  // Linux's per-CPU sd_llc and sd_llc_size (update_top_cache_domain()): the highest domain
  // of sd sharing the LLC (nullptr: none) and its span's size (1 without one).
  const sched_domain* sd_llc = nullptr;
  int sd_llc_size = 1;
  int push_cpu = -1;           // where it pushes a task
  sim::Rng sched_rnd_state;    // sched_rng(): this CPU's draws (NI_RANDOM)
  // CONFIG_CFS_BANDWIDTH: this CPU's runqueues given runtime from another CPU, unthrottled by
  // the call-function IPI (rq->cfsb_csd_list; IPI_CFSB_CSD).
  std::vector<cfs_rq*> cfsb_csd_list;
  // rqs lie one after another (RqArray): with an even number of lines, the same field of
  // every rq falls in a fraction of a cache's sets (48 lines: 1/16) and evicts itself.
  alignas(64) char odd_lines_pad[64];
};
static_assert(sizeof(rq) % 128 == 64, "struct rq must take an odd number of cache lines");

// ---- core.cc ----
void resched_curr(rq* rq);
void resched_curr_lazy(rq* rq);
inline bool test_tsk_need_resched(const task_struct* p) { return p->thread_flags & TIF_NEED_RESCHED; }
inline bool tif_need_resched_any(const task_struct* p) {
  return p->thread_flags & (TIF_NEED_RESCHED | TIF_NEED_RESCHED_LAZY);
}
void wakeup_preempt(rq* rq, task_struct* p, int flags);
void activate_task(rq* rq, task_struct* p, int flags);
void deactivate_task(rq* rq, task_struct* p, int flags);
void add_nr_running(rq* rq, unsigned n);
// Brings KernelImpl::lb_view[rq->cpu] and the group sums up to date after nr_running,
// h_nr_runnable or h_nr_queued, curr or the wake list of rq changed; lb_view_update_pelt()
// after only its PELT averages (cpu_load, cpu_util_cfs, cpu_runnable) may have.
void lb_view_update(rq* rq);
void lb_view_update_pelt(rq* rq);
void sub_nr_running(rq* rq, unsigned n);
void update_rq_clock(rq* rq);
void update_rq_avg_idle(rq* rq, sim::Time now);
bool cpus_share_cache(KernelImpl* k, int a, int b);
bool available_idle_cpu(KernelImpl* k, int cpu);
// __update_idle_core() (fair_wakeup.cc): rq's CPU goes idle; if its SMT siblings are idle
// too, its LLC's has_idle_cores hint is set.
void update_idle_core(rq* rq);
// sched_idle_rq() / sched_idle_cpu(): the CPU runs only SCHED_IDLE tasks, which any other
// task preempts at once, so placement takes it as idle.
bool sched_idle_rq(const rq* rq);
bool sched_idle_cpu(KernelImpl* k, int cpu);
// cpumask_test_cpu(cpu, p->cpus_ptr): inline, select_idle_cpu() and balancing test it per CPU.
inline bool task_allowed_on(const task_struct* p, int cpu) { return p->cpus_mask.test(cpu); }
void move_queued_task(rq* src, task_struct* p, rq* dst);
// The migration alone, without the wakeup preemption check (the caller reschedules).
void move_queued_task_locked(rq* src, task_struct* p, rq* dst);

// ---- fair_eevdf.cc ----
u64 calc_delta_fair(u64 delta, const sched_entity* se);
u64 avg_vruntime(cfs_rq* cfs_rq);
bool entity_eligible(cfs_rq* cfs_rq, sched_entity* se);
sched_entity* pick_eevdf(cfs_rq* cfs_rq, bool protect);
u64 sysctl_sched_base_slice(const KernelImpl* k);

// ---- core.cc: nice ----
// set_load_weight(): p's weight from its nice value (or SCHED_IDLE's); with update_load, a
// task that may be queued goes through its class's reweight_task() (a new task need not).
void set_load_weight(task_struct* p, bool update_load = false);
// set_user_nice(): setpriority()'s change of p's nice value, re-queueing p around it.
void set_user_nice(task_struct* p, long nice);
// sched_prio_to_weight[] of a nice value (-20..19).
unsigned long nice_to_weight(int nice);

// ---- topology.cc ----
void build_sched_domains(KernelImpl* k);
// ---- fair_wakeup.cc ----
int select_task_rq_fair(KernelImpl* k, task_struct* p, int prev_cpu, int wake_flags, int waker_cpu);
// ---- fair_balance.cc ----
void sched_balance_trigger(rq* rq);
// The CPU stopper's active_load_balance_cpu_stop(): run by __schedule() when an active
// balance is queued here, after curr was put back; moves one task to rq->push_cpu.
void active_load_balance_cpu_stop(rq* rq);
// ---- fair_idle_balance.cc ----
bool sched_balance_newidle(rq* rq);
enum : unsigned { NOHZ_BALANCE_KICK = 1u << 0, NOHZ_STATS_KICK = 1u << 1 };
void nohz_balancer_kick(rq* rq);
void nohz_idle_balance(rq* rq);
// nohz_run_idle_balance(): do_idle()'s start on a CPU its newly-idle balance flagged.
void nohz_run_idle_balance(rq* rq);

void sched_ttwu_pending(rq* rq);
bool try_to_wake_up(KernelImpl* k, task_struct* p, int wake_flags);
// wake_up_new_task(): places a new task and enqueues it. `as_fair_child`: p is placed as the
// fair task it is at the fork and takes its own class only after (a child of the fair launcher;
// see kernel/fork.cc).
void wake_up_new_task(KernelImpl* k, task_struct* p, bool as_fair_child = false);
void __schedule(rq* rq, bool preempt, bool sm_preempt = false);
void schedule(rq* rq, bool preempt, bool sm_preempt = false);
void do_sched_yield(rq* rq);
void sched_tick(rq* rq);

// ---- rt.cc ----
// push_rt_tasks(): after a switch to an RT task, push queued RT tasks that cannot run here
// to CPUs running less important work (the balance callback of set_next_task_rt()).
void push_rt_tasks(rq* rq);
// rto_push_irq_work_func(): the RT_PUSH_IPI chain reached this CPU: push, pass it on.
void rto_push_irq_work_func(rq* rq);
int select_task_rq_rt(KernelImpl* k, task_struct* p, int prev_cpu, int wake_flags, int waker_cpu);

inline bool fair_policy(int policy) {
  return policy == SCHED_NORMAL || policy == SCHED_BATCH || policy == SCHED_IDLE;
}
inline bool rt_policy(int policy) { return policy == SCHED_FIFO || policy == SCHED_RR; }
// The entity hierarchy, named as in kernel/sched/fair.c and sched.h.
inline bool entity_is_task(const sched_entity* se) { return !se->my_q; }
inline task_struct* task_of(sched_entity* se) { return se->owner; }
inline cfs_rq* cfs_rq_of(const sched_entity* se) { return se->cfs_rq; }
inline cfs_rq* group_cfs_rq(const sched_entity* se) { return se->my_q; }
inline sched_entity* parent_entity(const sched_entity* se) { return se->parent; }
// cfs_rq_is_idle(), se_is_idle(): an idle group's runqueue; a SCHED_IDLE task or idle group's entity.
inline bool cfs_rq_is_idle(const cfs_rq* cfs) { return cfs->idle > 0; }
inline bool se_is_idle(sched_entity* se) {
  if (entity_is_task(se)) return task_of(se)->policy == SCHED_IDLE;  // task_has_idle_policy()
  return cfs_rq_is_idle(group_cfs_rq(se));
}
// task_group(p)->cfs_rq[cpu]: p's group's runqueue on `cpu`.
cfs_rq* task_group_cfs_rq(const task_struct* p, int cpu);
// ---- fair_group.cc / fair.cc: task groups (CONFIG_FAIR_GROUP_SCHED) ----
// alloc_fair_sched_group() + init_tg_cfs_entry(): a group's runqueue and entity on every
// CPU, below `parent`'s (nullptr: the root).
void alloc_fair_sched_group(KernelImpl* k, task_group* tg, task_group* parent);
// online_fair_sched_group(): the group's entities join their parents' averages.
void online_fair_sched_group(KernelImpl* k, task_group* tg);
// sched_group_set_shares(): tg->shares (cpu.weight's), re-weighing its entities now.
void sched_group_set_shares(KernelImpl* k, task_group* tg, unsigned long shares);
// sched_group_set_idle(): cpu.idle, with the h_nr_idle counts above and the shares following.
void sched_group_set_idle(KernelImpl* k, task_group* tg, int idle);
// pick_next_task_fair()'s switch between two fair tasks: put/set the levels that differ.
void put_prev_set_next_fair(rq* rq, task_struct* prev, task_struct* next);
// set_task_cpu(): p now belongs to `cpu` (task_cpu() and set_task_rq()). For a queued task
// only between dequeue and enqueue. Tells p's class when the CPU changes (migrate_task_rq);
// __set_task_cpu() does not (a task not yet running anywhere: fork).
void set_task_cpu(task_struct* p, int cpu);
void __set_task_cpu(task_struct* p, int cpu);

// ---- fair_pelt.cc: fair.c's PELT entry points outside the fair class (readers: pelt.h) ----
// task_h_load(): a task's load as seen from the root (its load_avg, all tasks in the root group).
unsigned long task_h_load(const task_struct* p);
// task_util_est(): max(util_avg, util_est) of a task.
unsigned long task_util_est(const task_struct* p);
// sched_fork()'s init_entity_runnable_average() and wake_up_new_task()'s
// post_init_entity_util_avg(): a new task starts at full load and half the free capacity.
void init_entity_runnable_average(sched_entity* se);
void post_init_entity_util_avg(task_struct* p);
// sched_balance_update_blocked_averages(): decay what sleeping tasks left in the CPU's
// runqueue (from balancing on that CPU). Returns whether the averages changed.
bool sched_balance_update_blocked_averages(rq* rq);

}  // namespace kernel
