// The simulated hardware thread: user-mode progress (with the SMT slowdown), kernel work
// windows and their accounting, running program steps, and spinning on user words.
#include "kernel/cpu_exec.h"

#include <algorithm>
#include <cassert>

#include "kernel/entry/common.h"
#include "kernel/kernel_impl.h"
#include "kernel/syscalls.h"
#include "kernel/slice_ext.h"

namespace kernel {

namespace {

// Wall time that `work_ns` of user work takes on this CPU now.
sim::Time scaled_duration(const rq* rq, s64 work_ns) {
  if (!rq->ex.sibling_busy) return work_ns;
  const int f = rq->k->machine_.costs.smt_slowdown_permille;
  return (work_ns * f + 999) / 1000;
}

// User work done in `elapsed` wall ns now.
s64 scaled_progress(const rq* rq, sim::Time elapsed) {
  if (!rq->ex.sibling_busy) return elapsed;
  return static_cast<s64>(static_cast<uint64_t>(elapsed * 1000) / rq->k->smt_slowdown_div);
}

void spin_link(task_struct* p, UserWord* w) {
  p->spin_word = w;
  p->spin_prev = nullptr;
  p->spin_next = w->spinners;
  if (w->spinners) w->spinners->spin_prev = p;
  w->spinners = p;
}

// Arms the observation of a changed word by a spinner that is running user code. The
// spinners' reloads of the line are served one after another in no particular order: each
// sees the change one line transfer later plus a random share of another (so which spinner
// wins a released lock is not decided by the order they started spinning).
void arm_spin_observe(rq* rq, task_struct* p, sim::Time now) {
  const UserWord* w = p->spin_word;
  const int writer = w->last_writer_cpu < 0 ? rq->cpu : w->last_writer_cpu;
  KernelImpl* k = rq->k;
  const int d = k->line_distance(writer, rq->cpu);
  const sim::Time lat = k->line_ns[d];
  const sim::Time jitter = lat > 1 ? k->spin_jitter[d](k->rng) : 0;
  const sim::Time t = std::max(now + lat + jitter, rq->ex.user_since);
  if (!rq->ex.resume_timer.armed || rq->ex.resume_timer.expires > t)
    rq->k->engine()->arm(&rq->ex.resume_timer, t);
}

// Settles user progress of curr up to `now` (no change of mode).
void settle_user(rq* rq, sim::Time now) {
  cpu_exec& ex = rq->ex;
  if (!ex.in_user || now <= ex.user_since) return;
  const sim::Time elapsed = now - ex.user_since;
  task_struct* p = rq->curr;
  ex.user_ns += static_cast<u64>(elapsed);
  if (p->exec == ExecKind::Compute)
    p->exec_remaining_ns = std::max<s64>(0, p->exec_remaining_ns - scaled_progress(rq, elapsed));
  else if (p->exec == ExecKind::Spin)
    p->stats.spin_ns += static_cast<u64>(elapsed);
  ex.user_since = now;
}

// Reflects a change of this CPU's busy state in its SMT sibling's speed.
void smt_update_sibling(KernelImpl* k, int cpu, bool busy, sim::Time now) {
  const int sib = k->rq_of(cpu)->smt_sibling;
  if (sib < 0) return;
  rq* srq = k->rq_of(sib);
  if (srq->ex.sibling_busy == busy) return;
  settle_user(srq, now);
  srq->ex.sibling_busy = busy;
  // Only a sibling running user code has progress to rescale: its curr (on another line of
  // its rq) is read only then.
  if (!srq->ex.in_user) return;
  const task_struct* p = srq->curr;
  if (p->exec == ExecKind::Compute)
    k->engine()->arm(&srq->ex.resume_timer,
                     srq->ex.user_since + scaled_duration(srq, p->exec_remaining_ns));
}

void run_program(rq* rq, task_struct* p, sim::Time now);

}  // namespace

void spin_unlink(task_struct* p) {
  UserWord* w = p->spin_word;
  if (!w) return;
  if (p->spin_prev)
    p->spin_prev->spin_next = p->spin_next;
  else
    w->spinners = p->spin_next;
  if (p->spin_next) p->spin_next->spin_prev = p->spin_prev;
  p->spin_word = nullptr;
  p->spin_next = p->spin_prev = nullptr;
}

void cpu_enter_kernel(rq* rq, sim::Time now) {
  cpu_exec& ex = rq->ex;
  if (ex.in_user) {
    settle_user(rq, now);
    ex.in_user = false;
  }
  // The resume timer stays armed: every kernel path ends in cpu_return_to_user(), which
  // re-arms it (usually later: a deferral the engine makes free) or cancels it.
  if (ex.kwork_until < now) ex.kwork_until = now;
}

namespace {

// idle_exit_latency(), inlined in the idle exit's path.
__attribute__((always_inline)) inline sim::Time exit_latency_of(const rq* rq) {
  const hw::Costs& c = rq->k->machine_.costs;
  if (c.cpuidle_menu) {
    const uint8_t state = rq->k->cpuidle[static_cast<size_t>(rq->cpu)].state;
    if (state == kIdlePoll) return 0;  // poll_idle(): nothing to leave
    if (c.has_deep_idle() && state == kIdleDeep) return c.idle_deep_exit_ns;
  }
  if (c.cpuidle_haltpoll && cpu_in_haltpoll_poll(rq)) return 0;  // polling: no state to leave
  return c.idle_exit_ns;
}

}  // namespace

sim::Time idle_exit_latency(const rq* rq) { return exit_latency_of(rq); }

bool cpu_in_haltpoll_poll(const rq* rq) {
  if (!rq->k->machine_.costs.cpuidle_haltpoll || !rq->curr->is_idle) return false;
  const cpuidle_cpu& c = rq->k->cpuidle[static_cast<size_t>(rq->cpu)];
  return c.state == kHaltpollPoll && c.time_start >= 0;
}

bool cpu_in_idle_poll(const rq* rq) {
  if (!rq->k->machine_.costs.cpuidle_menu || !rq->curr->is_idle) return false;
  const cpuidle_cpu& c = rq->k->cpuidle[static_cast<size_t>(rq->cpu)];
  return c.state == kIdlePoll && c.time_start >= 0;
}

bool cpu_idle_polling(const rq* rq, sim::Time now) {
  if (!rq->curr->is_idle) return false;
  const hw::Costs& costs = rq->k->machine_.costs;
  const cpuidle_cpu& c = rq->k->cpuidle[static_cast<size_t>(rq->cpu)];
  if (costs.cpuidle_haltpoll && cpu_in_haltpoll_poll(rq)) return c.polling_from <= now;
  if (costs.cpuidle_menu && c.state == kIdlePoll) return c.polling_from <= now;
  if (!costs.idle_polling) return false;
  return c.polling_from <= now && !cpu_in_deep_idle(rq, now);
}

bool cpu_in_deep_idle(const rq* rq, sim::Time now) {
  if (!rq->k->machine_.costs.has_deep_idle() || !rq->curr->is_idle) return false;
  const cpuidle_cpu& c = rq->k->cpuidle[static_cast<size_t>(rq->cpu)];
  return c.state == kIdleDeep && c.time_start >= 0 && c.time_start <= now;
}

bool cpu_idle_exit_defer(rq* rq, sim::Timer* t, sim::Time now) {
  cpu_exec& ex = rq->ex;
  if (!rq->curr->is_idle || ex.kwork_until > now) return false;  // awake
  if (ex.idle_exit_until < now) ex.idle_exit_until = now + exit_latency_of(rq);
  if (ex.idle_exit_until == now) return false;  // out of idle (or no exit latency)
  rq->k->engine()->arm(t, ex.idle_exit_until);
  return true;
}

void cpu_charge(rq* rq, sim::Time cost) {
  cpu_exec& ex = rq->ex;
  const sim::Time now = rq->k->now();
  if (ex.kwork_until < now) ex.kwork_until = now;
  ex.kwork_until += cost;
  if (rq->curr->is_idle)
    ex.irq_idle_ns += static_cast<u64>(cost);
  else
    ex.sys_ns += static_cast<u64>(cost);
}

void cpu_charge_preemptible(rq* rq, sim::Time cost) {
  const sim::Time start = kernel_clock(rq, rq->k->now());
  cpu_charge(rq, cost);
  const PreemptModel m = rq->k->cfg_.preempt;
  if (m != PreemptModel::Full && m != PreemptModel::Lazy) return;  // no kernel preemption
  task_struct* p = rq->curr;
  p->preemptible_from = start;
  p->preemptible_to = start + cost;
  rq->k->preemptible_sections = true;
}

bool cpu_in_preemptible_section(const rq* rq, sim::Time now) {
  const task_struct* p = rq->curr;
  return p->preemptible_to > now && !p->is_idle;
}

// The interrupt came at `now`; the section's part before it has run. The kernel work queued
// after the section (the interrupt's own) moves up by what is taken out.
void cpu_preempt_section(rq* rq, sim::Time now) {
  task_struct* p = rq->curr;
  const sim::Time left = p->preemptible_to - std::max(now, p->preemptible_from);
  p->preemptible_from = p->preemptible_to = 0;
  rq->ex.kwork_until -= left;
  rq->ex.sys_ns -= static_cast<u64>(left);
  p->kwork_left += left;
}

// cpu_switch()'s part for preemptible sections (only once one was charged in the run): a
// section prev leaves unpreempted (a switch at a lazy request) finishes on this CPU's kernel
// work as it is and is no longer prev's to preempt elsewhere; the rest of one next was
// preempted in runs first, preemptible again.
static void cpu_switch_sections(rq* rq, task_struct* prev, task_struct* next, sim::Time now) {
  prev->preemptible_from = prev->preemptible_to = 0;
  if (!next->kwork_left) return;
  cpu_exec& ex = rq->ex;
  const sim::Time left = next->kwork_left;
  next->kwork_left = 0;
  const sim::Time start = std::max(ex.kwork_until, now);
  ex.kwork_until = start + left;
  ex.sys_ns += static_cast<u64>(left);
  next->preemptible_from = start;
  next->preemptible_to = start + left;
}

// cpu_switch(): curr changed at `now`. KernelImpl work still pending in the window moves with
// the switch (charged to the idle CPU's irq time or to the new task's system time), so the
// buckets always add up to elapsed time.
void cpu_switch(rq* rq, task_struct* prev, task_struct* next, sim::Time now) {
  KernelImpl* k = rq->k;
  cpu_exec& ex = rq->ex;
  const u64 pending = ex.kwork_until > now ? static_cast<u64>(ex.kwork_until - now) : 0;
  const u64 t = static_cast<u64>(now);
  if (!prev->is_idle) {
    prev->stats.run_ns += t - prev->stats.last_arrival;
    if (prev->on_rq && !prev->se.sched_delayed) prev->stats.wait_start = t;
  }
  if (next->is_idle != prev->is_idle) {
    if (next->is_idle) {
      ex.busy_ns += t - ex.busy_since;
      ex.sys_ns -= pending;
      ex.irq_idle_ns += pending;
      rq->idle_stamp = t;
      k->nr_idle_cpus++;
    } else {
      ex.busy_since = t;
      ex.irq_idle_ns -= pending;
      ex.sys_ns += pending;
      // put_prev_task_idle() (7.0; 6.12 and 6.18 sample at the next ttwu_do_activate())
      if (v70(k)) update_rq_avg_idle(rq, now);
      k->nr_idle_cpus--;
    }
    smt_update_sibling(k, rq->cpu, !next->is_idle, now);
    // Leaving idle ends do_idle() (its idle state, a stopped tick); entering it, the caller
    // runs do_idle() once the switch is charged (__schedule()).
    if (!next->is_idle) do_idle_exit(rq);
  }
  if (k->preemptible_sections) cpu_switch_sections(rq, prev, next, now);
  if (!next->is_idle) {
    next->stats.last_arrival = t;
    const u64 waited = t - next->stats.wait_start;
    next->stats.wait_sum_ns += waited;
    next->stats.wait_max_ns = std::max(next->stats.wait_max_ns, waited);
    next->stats.wait_count++;
    if (next->stats.lhp_since) {
      next->stats.lock_held_preempted_ns += t - next->stats.lhp_since;
      next->stats.lhp_since = 0;
    }
  }
}

void cpu_return_to_user(rq* rq) {
  cpu_exec& ex = rq->ex;
  KernelImpl* k = rq->k;
  task_struct* p = rq->curr;
  if (p->is_idle) {
    k->engine()->cancel(&ex.resume_timer);
    ex.in_user = false;
    return;
  }
  const sim::Time start = ex.kwork_until;
  switch (p->exec) {
    case ExecKind::Start:
    case ExecKind::SyscallRet:
    case ExecKind::SyscallEntry:
    case ExecKind::Kthread:
      ex.in_user = false;
      k->engine()->arm(&ex.resume_timer, start);
      break;
    case ExecKind::Compute:
      ex.in_user = true;
      ex.user_since = start;
      k->engine()->arm(&ex.resume_timer, start + scaled_duration(rq, p->exec_remaining_ns));
      break;
    case ExecKind::Spin:
      ex.in_user = true;
      ex.user_since = start;
      k->engine()->cancel(&ex.resume_timer);
      if (p->spin_word->value != p->spin_val) arm_spin_observe(rq, p, k->now());
      break;
    case ExecKind::Dead:
      assert(false && "a dead task is current");
      break;
  }
}

void cpu_word_changed(KernelImpl* k, UserWord* w, int /*writer*/, sim::Time now) {
  for (task_struct* p = w->spinners; p; p = p->spin_next) {
    if (!p->on_cpu || w->value == p->spin_val) continue;
    rq* rq = k->rq_of(p->cpu);
    if (rq->curr == p && rq->ex.in_user) arm_spin_observe(rq, p, now);
  }
}

// The resume timer: curr finished its compute step, observed its spin word change, or
// returns from the kernel to its next program step.
void cpu_resume_timer_fn(sim::Timer* t, sim::Time now) {
  rq* rq = static_cast<struct rq*>(t->ctx);
  task_struct* p = rq->curr;
  assert(!p->is_idle);
  rq->k->set_current(p, rq->cpu);
  if (p->exec == ExecKind::Kthread) {  // a kernel thread's loop (ksoftirqd)
    p->kthread_fn(rq, p);
    return;
  }
  if (rq->ex.in_user) {
    settle_user(rq, now);
    if (p->exec == ExecKind::Spin) {
      // The value changed back before this reload could have seen the change (another
      // thread took the lock long enough ago): keep spinning. A change back within the last
      // line transfer was not visible yet: the spinner saw the intermediate value, goes on,
      // and its compare-and-swap then fails.
      const UserWord* w = p->spin_word;
      const int writer = w->last_writer_cpu < 0 ? rq->cpu : w->last_writer_cpu;
      if (w->value == p->spin_val &&
          now - w->changed_at > rq->k->line_transfer_ns(writer, rq->cpu))
        return;
      spin_unlink(p);
    }
    rq->ex.in_user = false;
  }
  if (p->exec == ExecKind::SyscallEntry) {  // rescheduled at syscall entry; now the handler
    rq->ex.zero_time_steps = 0;
    syscall_body(rq, p, p->pending_syscall);
    return;
  }
  if (p->exec == ExecKind::Start) rseq_register_at_start(rq, p);
  run_program(rq, p, now);
}

namespace {

// Runs program steps of p (rq->curr) at `now` until one takes time or enters the kernel.
void run_program(rq* rq, task_struct* p, sim::Time now) {
  KernelImpl* k = rq->k;
  cpu_exec& ex = rq->ex;
  int64_t ret = p->exec == ExecKind::SyscallRet ? p->syscall_ret : 0;
  for (;;) {
    if (++ex.zero_time_steps > 100000) {
      k->warn_once("program of pid " + std::to_string(p->pid) +
                   " made 1e5 steps without time passing; it is given 1 us of work");
      ex.zero_time_steps = 0;
      p->exec = ExecKind::Compute;
      p->exec_remaining_ns = 1000;
      ex.in_user = true;
      ex.user_since = now;
      k->engine()->arm(&ex.resume_timer, now + scaled_duration(rq, 1000));
      return;
    }
    const UserAction& a = p->user->resume(ret, now, rq->cpu);
    ret = 0;
    switch (a.kind) {
      case UserAction::Compute:
        if (a.arg[0] <= 0) continue;
        ex.zero_time_steps = 0;
        p->exec = ExecKind::Compute;
        p->exec_remaining_ns = a.arg[0];
        ex.in_user = true;
        ex.user_since = now;
        k->engine()->arm(&ex.resume_timer, now + scaled_duration(rq, a.arg[0]));
        return;
      case UserAction::SpinWhileEq:
        if (a.word->value != a.arg[0]) continue;
        ex.zero_time_steps = 0;
        p->exec = ExecKind::Spin;
        p->spin_val = a.arg[0];
        spin_link(p, a.word);
        ex.in_user = true;
        ex.user_since = now;
        return;
      case UserAction::Syscall:
        ex.zero_time_steps = 0;
        do_syscall_64(rq, a, now);
        return;
      case UserAction::Exit:
        ex.zero_time_steps = 0;
        do_exit(rq, p);
        cpu_return_to_user(rq);
        return;
    }
  }
}

}  // namespace

void cpu_finish(rq* rq, sim::Time end) {
  cpu_exec& ex = rq->ex;
  settle_user(rq, end);
  task_struct* curr = rq->curr;
  const u64 t = static_cast<u64>(end);
  if (!curr->is_idle) {
    ex.busy_ns += t - ex.busy_since;
    ex.busy_since = t;
    curr->stats.run_ns += t - curr->stats.last_arrival;
    curr->stats.last_arrival = t;
  }
  if (ex.kwork_until > end) {
    const u64 over = static_cast<u64>(ex.kwork_until - end);
    if (curr->is_idle)
      ex.irq_idle_ns -= over;
    else
      ex.sys_ns -= over;
    ex.kwork_until = end;
  }
}

}  // namespace kernel
