// Softirqs: kernel/softirq.c of 6.12 .. 7.0 (handle_softirqs(), invoke_softirq(),
// __local_bh_enable_ip(), raise_softirq_irqoff(), run_ksoftirqd()), !PREEMPT_RT and
// PREEMPT_RT, and the latency_sensi_flag patch (fuyuanli, May 2024) on both.
//
// The vectors are cost sinks: raising queues handler work on a vector; a pass runs each
// pending vector's queued work (at most its budget, re-raising itself if work is left, as
// net_rx_action() does when netdev_budget runs out) as kernel work of the CPU. A
// handle_softirqs() invocation runs its passes back to back at once and charges them; the
// CPU then serves softirqs until `serving_until`, and a hardirq arriving in that window only
// marks work pending, which the invocation picks up after its pass (the restart check) as
// Linux does.
#include "kernel/softirq.h"

#include <algorithm>
#include <cassert>

#include "kernel/cpu_exec.h"
#include "kernel/entry/common.h"
#include "kernel/kernel_impl.h"
#include "kernel/syscalls.h"
#include "kernel/time/hrtimer.h"
#include "kernel/trace_points.h"

namespace kernel {

const char* const softirq_to_name[NR_SOFTIRQS] = {"HI",      "TIMER", "NET_TX", "NET_RX",  "BLOCK",
                                                  "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"};

u64 max_softirq_time_jiffies(int hz) {
  // msecs_to_jiffies(2) rounds up: DIV_ROUND_UP(2 * hz, 1000).
  return static_cast<u64>((2 * hz + 999) / 1000);
}

namespace {

// A kernel thread's UserContext: never asked for a step (its exec is Kthread).
class KthreadContext : public UserContext {
 public:
  const UserAction& resume(int64_t, int64_t, int) override {
    assert(false && "a kernel thread runs its thread function, not a program");
    return exit_;
  }

 private:
  UserAction exit_;
};

// jiffies as a kernel path on rq's CPU reads them at its current point.
u64 jiffies_now(const rq* rq) {
  return static_cast<u64>(kernel_clock(rq, rq->k->now()) / rq->k->cfg_.tick_nsec());
}

bool in_serving_softirq(const rq* rq) { return rq->k->now() < rq->softirq.serving_until; }

// One pass of handle_softirqs(): clear the pending word, run the vectors of the snapshot in
// bit order (each runs its queued work up to its budget and raises itself again if work is
// left), and charge the time to the CPU, accounted as Linux does.
void softirq_pass(rq* rq) {
  softirq_cpu& s = rq->softirq;
  uint32_t pending = s.pending;
  s.pending = 0;  // set_softirq_pending(0)
  sim::Time cost = 0;
  while (pending) {
    const int nr = __builtin_ctz(pending);
    pending &= pending - 1;
    s.count[nr]++;  // kstat_incr_softirqs_this_cpu()
    trace_softirq_entry(rq, static_cast<unsigned>(nr));
    if (s.action[nr]) {  // h->action(): it raises itself again if it leaves work
      cost += s.action[nr](rq, kernel_clock(rq, rq->k->now()) + cost);
      trace_softirq_exit(rq, static_cast<unsigned>(nr));
      continue;
    }
    sim::Time run = s.work_ns[nr];
    if (s.budget_ns[nr] > 0 && run > s.budget_ns[nr]) {
      run = s.budget_ns[nr];
      s.pending |= 1u << nr;  // __raise_softirq_irqoff() by the action itself
    }
    s.work_ns[nr] -= run;
    cost += run;
    trace_softirq_exit(rq, static_cast<unsigned>(nr));
  }
  if (cost == 0) return;
  cpu_charge(rq, cost);
  s.ns[s.ctx] += static_cast<u64>(cost);
  // irqtime_account_irq(): softirq time counts as irq time unless curr is ksoftirqd, whose
  // own runtime it is. Without IRQ_TIME_ACCOUNTING it stays in the interrupted task's
  // runtime (rq->clock_task follows rq->clock).
  if (s.ctx == SOFTIRQ_IN_KSOFTIRQD) return;
  task_struct* curr = rq->curr;
  if (!curr->is_idle) {
    curr->stats.softirq_ns += static_cast<u64>(cost);
    if (s.ctx == SOFTIRQ_AT_BH_ENABLE) curr->stats.softirq_bh_ns += static_cast<u64>(cost);
  }
  if (rq->k->cfg_.softirq.irq_time_accounting) s.irq_time += static_cast<u64>(cost);
}

// The restart check after a pass: again while time_before(jiffies, end), !need_resched()
// and --max_restart; otherwise what is pending goes to ksoftirqd.
void softirq_passes(rq* rq) {
  softirq_cpu& s = rq->softirq;
  for (;;) {
    softirq_pass(rq);
    if (!s.pending) break;
    if (jiffies_now(rq) < s.end_jiffies && !test_tsk_need_resched(rq->curr) && --s.max_restart)
      continue;
    s.handed_off = true;
    wakeup_softirqd(rq);
    break;
  }
  s.serving_until = kernel_clock(rq, rq->k->now());
}

// handle_softirqs(ksirqd): from hardirq exit, local_bh_enable() or ksoftirqd (`ctx`).
void handle_softirqs(rq* rq, int ctx) {
  softirq_cpu& s = rq->softirq;
  s.end_jiffies = jiffies_now(rq) + max_softirq_time_jiffies(rq->k->cfg_.hz);
  s.max_restart = MAX_SOFTIRQ_RESTART;
  s.ctx = ctx;
  s.handed_off = false;
  softirq_passes(rq);
}

// A raise while the CPU serves softirqs (a hardirq during a pass): the running invocation
// sees it at its restart check, at the end of its last pass; if it had already handed the
// rest to ksoftirqd, ksoftirqd has been woken.
void softirq_restart(rq* rq) {
  softirq_cpu& s = rq->softirq;
  if (s.handed_off) return;
  if (jiffies_now(rq) < s.end_jiffies && !test_tsk_need_resched(rq->curr) && --s.max_restart) {
    softirq_passes(rq);
    return;
  }
  s.handed_off = true;
  wakeup_softirqd(rq);
  s.serving_until = kernel_clock(rq, rq->k->now());
}

// do_softirq(): nothing when in interrupt, else handle_softirqs(false) on the softirq stack.
void do_softirq(rq* rq) {
  if (in_interrupt(rq) || !rq->softirq.pending) return;
  handle_softirqs(rq, SOFTIRQ_AT_BH_ENABLE);
}

// ---- !PREEMPT_RT ----

// invoke_softirq() (6.5+: no ksoftirqd_running() bypass, reverted by d15121be7485): inline
// unless threadirqs is set and ksoftirqd exists.
void invoke_softirq(rq* rq) {
  if (!rq->k->cfg_.softirq.threadirqs || !rq->softirq.ksoftirqd)
    handle_softirqs(rq, SOFTIRQ_AT_IRQ_EXIT);
  else
    wakeup_softirqd(rq);
}

// __local_bh_enable_ip(): with softirqs about to be enabled and not in interrupt,
// do_softirq() runs what is pending, on top of the calling task.
void local_bh_enable_ip(rq* rq, task_struct*) {
  if (!in_interrupt(rq) && rq->softirq.pending) do_softirq(rq);
}

// The patch: a flagged task wakes ksoftirqd instead of calling do_softirq().
void local_bh_enable_ip_patched(rq* rq, task_struct* p) {
  if (in_interrupt(rq) || !rq->softirq.pending) return;
  if (p->latency_sensi_flag)
    wakeup_softirqd(rq);
  else
    do_softirq(rq);
}

// ---- PREEMPT_RT ----

// invoke_softirq(): never inline; wake ksoftirqd unless a task holds the BH count
// (should_wake_ksoftirqd(): softirq_ctrl.cnt == 0), which runs them at its local_bh_enable().
void invoke_softirq_rt(rq* rq) {
  if (rq->softirq.bh_disabled == 0) wakeup_softirqd(rq);
}

// __local_bh_enable_ip() (RT): the outermost enable runs pending softirqs in the task
// (__do_softirq()) when it is preemptible, else wakes ksoftirqd. The paths that reach it
// here (a syscall's BH section) are preemptible.
void local_bh_enable_ip_rt(rq* rq, task_struct*) {
  if (rq->softirq.bh_disabled != 0 || !rq->softirq.pending) return;
  handle_softirqs(rq, SOFTIRQ_AT_BH_ENABLE);
}

// The patch's RT variant: `if (!preempt_on || current->latency_sensi_flag)` wake ksoftirqd.
void local_bh_enable_ip_rt_patched(rq* rq, task_struct* p) {
  if (rq->softirq.bh_disabled != 0 || !rq->softirq.pending) return;
  if (p->latency_sensi_flag)
    wakeup_softirqd(rq);
  else
    handle_softirqs(rq, SOFTIRQ_AT_BH_ENABLE);
}

const softirq_ops kMainline = {"mainline", invoke_softirq, local_bh_enable_ip};
const softirq_ops kPatched = {"latency_sensi_flag", invoke_softirq, local_bh_enable_ip_patched};
const softirq_ops kMainlineRt = {"mainline-rt", invoke_softirq_rt, local_bh_enable_ip_rt};
const softirq_ops kPatchedRt = {"latency_sensi_flag-rt", invoke_softirq_rt,
                                local_bh_enable_ip_rt_patched};

// smpboot_thread_fn() for ksoftirqd: ksoftirqd_should_run() is local_softirq_pending();
// run_ksoftirqd() runs handle_softirqs(true), then cond_resched(). Nothing pending: sleep.
void ksoftirqd_fn(rq* rq, task_struct* p) {
  if (!rq->softirq.pending) {
    p->__state = TASK_INTERRUPTIBLE;
    schedule(rq, /*preempt=*/false);
  } else {
    handle_softirqs(rq, SOFTIRQ_IN_KSOFTIRQD);
  }
  exit_to_user_mode_loop(rq, /*from_irq=*/false);  // cond_resched()
  cpu_return_to_user(rq);
}


// sendto(): arg[0] = bytes, arg[1] = ns of the transmit path, arg[2] = ns of NET_TX work
// it raises (0: none). udp_sendmsg() down to the driver's xmit runs under local_bh_disable()
// (__dev_queue_xmit()'s rcu_read_lock_bh()); a stopped device queue makes __netif_schedule()
// raise NET_TX there; the closing local_bh_enable() runs or hands off what is pending.
int64_t sys_sendto(rq* rq, task_struct* p, const UserAction& a) {
  if (a.arg[0] < 0 || a.arg[1] < 0 || a.arg[2] < 0) return -EINVAL;
  local_bh_disable(rq);
  softirq_cpu& s = rq->softirq;
  s.bh_from = kernel_clock(rq, rq->k->now());
  cpu_charge(rq, a.arg[1]);
  s.bh_until = kernel_clock(rq, rq->k->now());
  s.bh_task = p;
  if (a.arg[2] > 0) raise_softirq_irqoff(rq, NET_TX_SOFTIRQ, a.arg[2]);
  local_bh_enable(rq);
  return a.arg[0];
}

}  // namespace

// The registry of variants: one line each, {the SoftirqConfig flags that select it, its table}.
// A variant with a flag of its own adds the flag (a bool of SoftirqConfig, one entry in
// kernel/settings.cc) and its line here.
namespace {
struct softirq_variant {
  bool latency_sensi_flag, preempt_rt;
  const softirq_ops* ops;
};
const softirq_variant kSoftirqVariants[] = {
    {false, false, &kMainline},
    {true, false, &kPatched},
    {false, true, &kMainlineRt},
    {true, true, &kPatchedRt},
};
}  // namespace

const softirq_ops* softirq_select(const SoftirqConfig& cfg) {
  for (const softirq_variant& v : kSoftirqVariants)
    if (v.latency_sensi_flag == cfg.latency_sensi_flag && v.preempt_rt == cfg.preempt_rt) return v.ops;
  return &kMainline;
}

bool in_interrupt(const rq* rq) {
  const softirq_cpu& s = rq->softirq;
  return s.hardirq > 0 || s.bh_disabled > 0 || in_serving_softirq(rq);
}

void raise_softirq_irqoff(rq* rq, int nr, sim::Time work_ns) {
  softirq_cpu& s = rq->softirq;
  s.work_ns[nr] += work_ns;
  s.pending |= 1u << nr;  // __raise_softirq_irqoff()
  // should_wake_ksoftirqd(): always on !RT; on RT only if no task holds the BH count.
  if (!in_interrupt(rq)) wakeup_softirqd(rq);
}

void softirq_set_budget(rq* rq, int nr, sim::Time budget_ns) { rq->softirq.budget_ns[nr] = budget_ns; }

void wakeup_softirqd(rq* rq) {
  softirq_cpu& s = rq->softirq;
  if (!s.ksoftirqd) return;
  if (try_to_wake_up(rq->k, s.ksoftirqd, 0)) s.nr_wakeup_softirqd++;
}

// __irq_exit_rcu(): preempt_count_sub(HARDIRQ_OFFSET); if (!in_interrupt() &&
// local_softirq_pending()) invoke_softirq(). A hardirq that came while the CPU serves
// softirqs leaves its work to the running invocation.
void irq_exit_softirq_pending(rq* rq) {
  softirq_cpu& s = rq->softirq;
  if (s.hardirq > 0 || s.bh_disabled > 0) return;
  if (in_serving_softirq(rq)) {
    softirq_restart(rq);
    return;
  }
  // The interrupt came inside the BH-disabled section of curr's syscall, charged at once
  // before it: in_interrupt() held at its exit, and what it raised is run (or handed off)
  // by that section's local_bh_enable(), which ends where this path now stands.
  const sim::Time irq_at = rq->k->now();
  if (irq_at >= s.bh_from && irq_at < s.bh_until && s.bh_task == rq->curr) {
    rq->k->softirq_ops->local_bh_enable(rq, rq->curr);
    return;
  }
  rq->k->softirq_ops->invoke_softirq(rq);
}

void local_bh_disable(rq* rq) { rq->softirq.bh_disabled++; }

void local_bh_enable(rq* rq) {
  if (--rq->softirq.bh_disabled > 0) return;  // not the outermost
  rq->k->softirq_ops->local_bh_enable(rq, rq->curr);
}

void softirq_device_irq(rq* rq, sim::Time now, int nr, sim::Time work_ns, sim::Time handler_ns) {
  irqentry_enter(rq, now);
  cpu_charge(rq, handler_ns);
  raise_softirq_irqoff(rq, nr, work_ns);
  irqentry_exit(rq);
}

task_struct* kthread_create(KernelImpl* k, TaskAttr attr, void (*fn)(rq* rq, task_struct* p)) {
  if (k->kthreadd_tgid == 0) k->kthreadd_tgid = k->create_process("kthreadd");
  attr.preexisting = true;
  k->create_thread(k->kthreadd_tgid, attr, std::make_unique<KthreadContext>(), 0);
  task_struct* p = k->tasks().back().get();
  hrtimer_sleeper_cancel(k, p);  // asleep until woken
  p->exec = ExecKind::Kthread;
  p->kthread_fn = fn;
  return p;
}

void spawn_ksoftirqd(KernelImpl* k) {
  for (int cpu = 0; cpu < k->nr_cpus(); ++cpu) {
    TaskAttr attr;
    attr.comm = "ksoftirqd/" + std::to_string(cpu);
    attr.cpus = {cpu};
    k->rq_of(cpu)->softirq.ksoftirqd = kthread_create(k, attr, ksoftirqd_fn);
  }
}

SoftirqTaskStats softirq_task_stats(const KernelImpl& k, int pid) {
  SoftirqTaskStats st;
  for (const auto& t : k.tasks()) {
    if (t->pid != pid) continue;
    st.run_ns = t->stats.run_ns;
    st.softirq_ns = t->stats.softirq_ns;
    st.softirq_bh_ns = t->stats.softirq_bh_ns;
    st.wait_sum_ns = t->stats.wait_sum_ns;
    st.wait_max_ns = t->stats.wait_max_ns;
    st.wait_count = t->stats.wait_count;
    st.nr_syscalls = t->stats.nr_syscalls;
    break;
  }
  return st;
}

SoftirqCpuStats softirq_cpu_stats(const KernelImpl& k, int cpu) {
  const softirq_cpu& s = k.cpu_rq(cpu).softirq;
  SoftirqCpuStats st;
  st.ns = s.ns;
  st.count = s.count;
  st.nr_wakeup_softirqd = s.nr_wakeup_softirqd;
  st.ksoftirqd_pid = s.ksoftirqd ? s.ksoftirqd->pid : 0;
  return st;
}

void register_softirq_syscalls() { register_syscall(NR_sendto, sys_sendto); }

}  // namespace kernel
