// The syscalls the simulated programs use: sched_yield, nanosleep, clock_nanosleep, futex,
// getpid, setpriority, exit. Mirrors kernel/sched/syscalls.c, kernel/time/hrtimer.c,
// kernel/futex/, kernel/sys.c.
#include "kernel/syscalls.h"

#include <algorithm>
#include <array>

#include "kernel/cpu_exec.h"
#include "kernel/kernel.h"
#include "kernel/time/hrtimer.h"
#include "kernel/slice_ext.h"
#include "kernel/task_shared.h"

namespace kernel {

void register_rseq_syscalls();  // kernel/rseq.cc
void register_fork_syscalls();  // kernel/fork.cc

namespace {

int64_t sys_ni_syscall(rq*, task_struct*, const UserAction&) { return -ENOSYS; }

std::array<syscall_fn, NR_syscalls>& table() {
  static std::array<syscall_fn, NR_syscalls> t = [] {
    std::array<syscall_fn, NR_syscalls> a;
    a.fill(sys_ni_syscall);
    return a;
  }();
  return t;
}

// sched_yield(): a task holding an RFC/2023 grant calls schedule() directly instead.
int64_t sys_sched_yield(rq* rq, task_struct* p, const UserAction&) {
  if (slice_ext(rq)->sched_yield(rq, p)) {
    schedule(rq, /*preempt=*/false);
    return 0;
  }
  do_sched_yield(rq);
  return 0;
}

int64_t sys_getpid(rq*, task_struct* p, const UserAction&) { return p->tgid; }

// hrtimer_nanosleep(): arm the task's hrtimer on this CPU and block until it fires.
int64_t sleep_until(rq* rq, task_struct* p, sim::Time expires) {
  Kernel* k = rq->k;
  if (expires <= k->now()) return 0;
  cpu_charge(rq, k->machine_.costs.hrtimer_program_ns);
  p->sleep_timer.arg = static_cast<uint32_t>(rq->cpu);
  hrtimer_start(rq, &p->sleep_timer, expires);
  p->__state = TASK_INTERRUPTIBLE;
  return 0;
}

// nanosleep(ns): arg[0] = duration in ns.
int64_t sys_nanosleep(rq* rq, task_struct* p, const UserAction& a) {
  if (a.arg[0] < 0) return -EINVAL;
  return sleep_until(rq, p, rq->k->now() + a.arg[0]);
}

// clock_nanosleep(CLOCK_MONOTONIC, flags, t): arg[0] = 1 for TIMER_ABSTIME, arg[1] = ns.
int64_t sys_clock_nanosleep(rq* rq, task_struct* p, const UserAction& a) {
  if (a.arg[1] < 0) return -EINVAL;
  const sim::Time t = a.arg[0] ? a.arg[1] : rq->k->now() + a.arg[1];
  return sleep_until(rq, p, t);
}

// futex(word, op, val): FUTEX_WAIT blocks iff *word == val (else -EAGAIN); FUTEX_WAKE wakes
// up to val waiters in FIFO order and returns how many.
int64_t sys_futex(rq* rq, task_struct* p, const UserAction& a) {
  UserWord* w = a.word;
  if (!w) return -EINVAL;
  if (a.arg[0] == FUTEX_WAIT) {
    if (w->value != a.arg[1]) return -EAGAIN;
    p->futex_word = w;
    p->futex_next = nullptr;
    if (w->futex_tail)
      w->futex_tail->futex_next = p;
    else
      w->futex_head = p;
    w->futex_tail = p;
    p->__state = TASK_INTERRUPTIBLE;
    return 0;
  }
  if (a.arg[0] == FUTEX_WAKE) {
    int64_t n = 0;
    while (n < a.arg[1] && w->futex_head) {
      task_struct* t = w->futex_head;
      w->futex_head = t->futex_next;
      if (!w->futex_head) w->futex_tail = nullptr;
      t->futex_next = nullptr;
      t->futex_word = nullptr;
      try_to_wake_up(rq->k, t, 0);
      ++n;
    }
    return n;
  }
  return -ENOSYS;
}

// setpriority(which, who, niceval) (kernel/sys.c): arg[0] = which, arg[1] = who, arg[2] =
// niceval. Only PRIO_PROCESS is modelled: who is a thread id, 0 the caller; the value is
// clamped to -20..19 (as Linux does) and set with set_user_nice(). Programs run with
// CAP_SYS_NICE, so lowering the nice value is allowed (no -EACCES). PRIO_PGRP and PRIO_USER
// (process groups, users) do not exist here: -EINVAL, as for an unknown `which`.
int64_t sys_setpriority(rq* rq, task_struct* p, const UserAction& a) {
  if (a.arg[0] != PRIO_PROCESS) return -EINVAL;
  const int64_t niceval = std::clamp<int64_t>(a.arg[2], -20, 19);
  task_struct* t = nullptr;
  if (a.arg[1] == 0) {
    t = p;
  } else {
    for (const auto& c : rq->k->tasks())  // find_task_by_vpid()
      if (c->pid == a.arg[1] && !c->is_idle && !c->exited) t = c.get();
  }
  if (!t) return -ESRCH;
  set_user_nice(t, static_cast<long>(niceval));
  return 0;
}

int64_t sys_exit(rq* rq, task_struct* p, const UserAction&) {
  do_exit(rq, p);
  return 0;
}

struct Registrar {
  Registrar() {
    register_syscall(NR_sched_yield, sys_sched_yield);
    register_syscall(NR_nanosleep, sys_nanosleep);
    register_syscall(NR_clock_nanosleep, sys_clock_nanosleep);
    register_syscall(NR_futex, sys_futex);
    register_syscall(NR_getpid, sys_getpid);
    register_syscall(NR_setpriority, sys_setpriority);
    register_syscall(NR_exit, sys_exit);
    register_rseq_syscalls();
    register_fork_syscalls();
  }
};

}  // namespace

void register_syscall(int nr, syscall_fn fn) { table()[nr] = fn; }

int64_t invoke_syscall(rq* rq, task_struct* p, const UserAction& a) {
  static Registrar registrar;
  if (a.nr < 0 || a.nr >= NR_syscalls) return -ENOSYS;
  return table()[a.nr](rq, p, a);
}

// do_exit(): dequeue for good and schedule away; the task never runs again.
void do_exit(rq* rq, task_struct* p) {
  spin_unlink(p);
  task_shared_release(p);
  rq->k->mm_cid_ops->exit(rq, p);  // exit_signals() -> sched_mm_cid_exit_signals()
  p->exited = true;
  p->exec = ExecKind::Dead;
  p->__state = TASK_DEAD;
  rq->k->engine()->cancel(&p->sleep_timer);
  // exit_mm(): the last thread of a process takes its [task_shared] pages with it.
  bool last = true;
  for (const auto& t : rq->k->tasks())
    if (t->tgid == p->tgid && !t->exited) last = false;
  if (last) rq->k->exit_mm(p->tgid);
  schedule(rq, /*preempt=*/false);
  // finish_task_switch() of the switch away from the dead task: put_task_struct_rcu_user().
  if (p->sched_class->task_dead) p->sched_class->task_dead(p);
}

}  // namespace kernel
