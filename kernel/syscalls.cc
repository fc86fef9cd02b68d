// The syscalls the simulated programs use: read, sched_yield, nanosleep, clock_nanosleep, futex,
// getpid, setpriority, set_tid_address, exit (recvmsg: kernel/net/sock.cc; sendto:
// kernel/softirq.cc). Mirrors kernel/sched/syscalls.c, kernel/time/hrtimer.c, kernel/futex/,
// kernel/sys.c, kernel/fork.c; sched_setattr and sched_getattr (kernel/sched/syscalls.c).
#include "kernel/syscalls.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "kernel/cpu_exec.h"
#include "kernel/entry/common.h"
#include "kernel/kernel_impl.h"
#include "kernel/net/sock.h"
#include "kernel/time/hrtimer.h"
#include "kernel/slice_ext.h"
#include "kernel/softirq.h"
#include "kernel/task_shared.h"
#include "kernel/trace_points.h"

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

// hrtimer_nanosleep(): arm the task's hrtimer on this CPU, from `expires` to `expires` + its
// timer slack (none for RT: __setscheduler_params()), and block until it fires. A window
// that has already closed returns at once.
int64_t sleep_until(rq* rq, task_struct* p, sim::Time expires) {
  KernelImpl* k = rq->k;
  const sim::Time slack = rt_policy(p->policy) ? 0 : k->cfg_.timer_slack_ns;
  if (expires <= k->now() - slack) return 0;
  cpu_charge(rq, k->machine_.costs.hrtimer_program_ns);
  hrtimer_sleeper_start(rq, p, expires, slack);
  p->__state = TASK_INTERRUPTIBLE;
  return 0;
}

// nanosleep(ns): arg[0] = duration in ns.
int64_t sys_nanosleep(rq* rq, task_struct* p, const UserAction& a) {
  if (a.arg[0] < 0) return -EINVAL;
  const sim::Time now = rq->k->now();
  return sleep_until(rq, p, sim::add_saturating(now, a.arg[0]));
}

// clock_nanosleep(CLOCK_MONOTONIC, flags, t): arg[0] = 1 for TIMER_ABSTIME, arg[1] = ns.
int64_t sys_clock_nanosleep(rq* rq, task_struct* p, const UserAction& a) {
  if (a.arg[1] < 0) return -EINVAL;
  const sim::Time now = rq->k->now();
  const sim::Time rel_end = sim::add_saturating(now, a.arg[1]);
  const sim::Time t = a.arg[0] ? a.arg[1] : rel_end;
  return sleep_until(rq, p, t);
}

// The interrupt of a read's data arriving on the CPU that asked for it (blk-mq completes a
// request on its submitting CPU; a socket's packet is taken as arriving there too): it wakes
// the reader, at the time the data arrives, with no timer slack.
void read_complete_irq(sim::Timer* t, sim::Time now) {
  task_struct* p = static_cast<task_struct*>(t->ctx);
  rq* rq = p->kern->rq_of(static_cast<int>(t->arg));
  if (cpu_idle_exit_defer(rq, t, now)) return;
  irqentry_enter(rq, now);
  trace_irq_handler_entry(rq, kIrqDevice, "read_complete");
  try_to_wake_up(p->kern, p, 0);
  trace_irq_handler_exit(rq, kIrqDevice);
  irqentry_exit(rq);
}

// read(): arg[0] = ns until the data arrives (a disk's completion, a peer's reply). The
// task blocks until the arrival's interrupt wakes it; the request's submission is priced as
// programming a timer. The task's sleep timer stands for the device (hrtimer_sleeper_start()
// takes it back), outside the CPU's sleep-timer queue: no other interrupt ends the wait.
int64_t sys_read(rq* rq, task_struct* p, const UserAction& a) {
  if (a.arg[0] < 0) return -EINVAL;
  if (a.arg[0] == 0) return 0;
  KernelImpl* k = rq->k;
  const sim::Time now = k->now();
  cpu_charge(rq, k->machine_.costs.hrtimer_program_ns);
  p->sleep_timer.fn = read_complete_irq;
  p->sleep_timer.arg = static_cast<uint32_t>(rq->cpu);
  const sim::Time arrives = sim::add_saturating(now, a.arg[0]);
  hrtimer_start(rq, &p->sleep_timer, arrives);
  p->__state = TASK_INTERRUPTIBLE;
  return 0;
}

// futex_wake(): wakes up to n waiters of w from the head of its queue; returns how many.
int64_t futex_wake(KernelImpl* k, UserWord* w, int64_t nr_wake) {
  int64_t n = 0;
  while (n < nr_wake && w->futex_head) {
    task_struct* t = w->futex_head;
    w->futex_head = t->futex_next;
    if (!w->futex_head) w->futex_tail = nullptr;
    t->futex_next = nullptr;
    t->futex_word = nullptr;
    try_to_wake_up(k, t, 0);
    ++n;
  }
  return n;
}

// __futex_queue(): the hash bucket's waiters are a plist ordered by min(prio, MAX_RT_PRIO):
// RT waiters by priority, then the fair ones, each in arrival order.
void futex_queue(UserWord* w, task_struct* p) {
  const int key = std::min(p->prio, MAX_RT_PRIO);
  task_struct* prev = nullptr;
  for (task_struct* q = w->futex_head; q && std::min(q->prio, MAX_RT_PRIO) <= key;
       q = q->futex_next)
    prev = q;
  p->futex_next = prev ? prev->futex_next : w->futex_head;
  if (prev)
    prev->futex_next = p;
  else
    w->futex_head = p;
  if (!p->futex_next) w->futex_tail = p;
}

// futex(word, op, val): FUTEX_WAIT blocks iff *word == val (else -EAGAIN); FUTEX_WAKE wakes
// up to val waiters, highest RT priority first, and returns how many.
int64_t sys_futex(rq* rq, task_struct* p, const UserAction& a) {
  UserWord* w = a.word;
  if (!w) return -EINVAL;
  if (a.arg[0] == FUTEX_WAIT) {
    if (w->value != a.arg[1]) return -EAGAIN;
    p->futex_word = w;
    futex_queue(w, p);
    p->__state = TASK_INTERRUPTIBLE;
    return 0;
  }
  if (a.arg[0] == FUTEX_WAKE) return futex_wake(rq->k, w, a.arg[1]);
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

// find_process_by_pid(): 0 is the caller.
task_struct* find_process_by_pid(rq* rq, task_struct* self, int64_t pid) {
  if (pid == 0) return self;
  for (const auto& t : rq->k->tasks())
    if (t->pid == pid && !t->exited) return t.get();
  return nullptr;
}

// get_params(): the task's parameters into attr (fair: nice and slice; RT: priority).
void get_params(const task_struct* p, sched_attr* attr) {
  if (rt_policy(p->policy)) {
    attr->sched_priority = static_cast<uint32_t>(p->rt_priority);
  } else {
    attr->sched_nice = p->nice;
    attr->sched_runtime = p->se.slice;
  }
}

// The latency_sensi_flag patch, in both paths of __sched_setscheduler(): with the flag bit,
// the value (0 or 1, checked before either path) becomes the task's.
void set_latency_sensi_flag(task_struct* p, const sched_attr& attr) {
  if (attr.sched_flags & SCHED_FLAG_LATENCY_SENSITIVE)
    p->latency_sensi_flag = attr.sched_latency_sensi_flag != 0;
}

constexpr uint64_t SCHED_FLAG_SUGOV = 0x10000000;  // kernel-internal (schedutil's DL threads)
constexpr uint32_t kPageSize = 4096;

// sched_setattr(pid, uattr, flags): arg[0] = pid, arg[1] = struct sched_attr *, arg[2] =
// flags. sched_copy_attr() reads the struct as far as this kernel knows it (mainline 56
// bytes, the patch 64) and refuses unknown non-zero bytes (-E2BIG, with the size it knows
// written back); __sched_setscheduler() checks flags against SCHED_FLAG_ALL (the patch adds
// SCHED_FLAG_LATENCY_SENSITIVE), policy and priority, then takes the early path when
// nothing changes. The simulated programs run privileged (no permission checks).
int64_t sys_sched_setattr(rq* rq, task_struct* self, const UserAction& a) {
  KernelImpl* k = rq->k;
  const bool patched = k->cfg_.softirq.latency_sensi_flag;
  auto* uattr = reinterpret_cast<sched_attr*>(a.arg[1]);
  if (!uattr || a.arg[0] < 0 || a.arg[2] != 0) return -EINVAL;
  // sched_copy_attr()
  const uint32_t ksize = patched ? static_cast<uint32_t>(sizeof(sched_attr)) : SCHED_ATTR_SIZE_VER1;
  uint32_t usize = uattr->size;
  if (usize == 0) usize = SCHED_ATTR_SIZE_VER0;
  if (usize < SCHED_ATTR_SIZE_VER0 || usize > kPageSize) {
    uattr->size = ksize;
    return -E2BIG;
  }
  sched_attr attr;
  const auto* src = reinterpret_cast<const unsigned char*>(uattr);
  const uint32_t have = std::min<uint32_t>(usize, sizeof(sched_attr));  // what the struct holds
  for (uint32_t i = ksize; i < have; ++i)  // copy_struct_from_user(): unknown bytes must be 0
    if (src[i]) {
      uattr->size = ksize;
      return -E2BIG;
    }
  std::memcpy(&attr, src, std::min(have, ksize));
  if (usize < SCHED_ATTR_SIZE_VER1 &&
      (attr.sched_flags & (SCHED_FLAG_UTIL_CLAMP_MIN | SCHED_FLAG_UTIL_CLAMP_MAX)))
    return -EINVAL;
  attr.sched_nice = std::clamp(attr.sched_nice, -20, 19);
  // sys_sched_setattr()
  if (static_cast<int32_t>(attr.sched_policy) < 0) return -EINVAL;
  task_struct* p = find_process_by_pid(rq, self, a.arg[0]);
  if (!p || p->is_idle) return -ESRCH;
  if (attr.sched_flags & SCHED_FLAG_KEEP_PARAMS) get_params(p, &attr);
  // __sched_setscheduler()
  const int policy = (attr.sched_flags & SCHED_FLAG_KEEP_POLICY)
                         ? p->policy : static_cast<int>(attr.sched_policy);
  if (!fair_policy(policy) && !rt_policy(policy)) return -EINVAL;  // (no SCHED_DEADLINE here)
  const uint64_t all = SCHED_FLAG_ALL | (patched ? uint64_t{SCHED_FLAG_LATENCY_SENSITIVE} : uint64_t{0});
  if (attr.sched_flags & ~(all | SCHED_FLAG_SUGOV)) return -EINVAL;
  if (attr.sched_priority > MAX_RT_PRIO - 1) return -EINVAL;
  if (rt_policy(policy) != (attr.sched_priority != 0)) return -EINVAL;
  if (attr.sched_flags & SCHED_FLAG_SUGOV) return -EINVAL;
  // The patch's check, ahead of both paths and whatever the flags say.
  if (attr.sched_latency_sensi_flag > 1) return -EINVAL;
  const bool clamp = attr.sched_flags & (SCHED_FLAG_UTIL_CLAMP_MIN | SCHED_FLAG_UTIL_CLAMP_MAX);
  if (policy == p->policy) {
    bool change = clamp;
    if (fair_policy(policy) &&
        (attr.sched_nice != p->nice || attr.sched_runtime != p->se.slice))
      change = true;
    if (rt_policy(policy) && static_cast<int>(attr.sched_priority) != p->rt_priority) change = true;
    if (!change) {  // the early path
      set_latency_sensi_flag(p, attr);
      return 0;
    }
  }
  // change: the patch sets the flag with the new parameters. The rest of a change (a new
  // policy, nice, priority or slice for a live task) is not modelled: warned, not applied.
  set_latency_sensi_flag(p, attr);
  const u64 slice = attr.sched_runtime
                        ? std::clamp<u64>(attr.sched_runtime, 100000, 100000000)
                        : k->base_slice_ns;
  if (policy != p->policy || (fair_policy(policy) && (attr.sched_nice != p->nice || slice != p->se.slice)) ||
      (rt_policy(policy) && static_cast<int>(attr.sched_priority) != p->rt_priority))
    k->warn_once("sched_setattr: changing the policy, nice, priority or slice of pid " +
                 std::to_string(p->pid) + " is not modelled; only its flags were applied");
  return 0;
}

// sched_getattr(pid, uattr, usize, flags): arg[0] = pid, arg[1] = struct sched_attr *,
// arg[2] = usize, arg[3] = flags. sched_attr_copy_to_user() writes min(usize, what the
// kernel knows) bytes and that size. Util clamps read as CONFIG_UCLAMP_TASK's defaults.
int64_t sys_sched_getattr(rq* rq, task_struct* self, const UserAction& a) {
  const bool patched = rq->k->cfg_.softirq.latency_sensi_flag;
  auto* uattr = reinterpret_cast<sched_attr*>(a.arg[1]);
  if (!uattr || a.arg[0] < 0 || a.arg[2] > kPageSize || a.arg[2] < SCHED_ATTR_SIZE_VER0 ||
      a.arg[3] != 0)
    return -EINVAL;
  task_struct* p = find_process_by_pid(rq, self, a.arg[0]);
  if (!p || p->is_idle) return -ESRCH;
  sched_attr kattr;
  kattr.sched_policy = static_cast<uint32_t>(p->policy);
  get_params(p, &kattr);
  kattr.sched_util_min = 0;
  kattr.sched_util_max = 1024;  // SCHED_CAPACITY_SCALE
  if (patched) {
    kattr.sched_latency_sensi_flag = p->latency_sensi_flag;
    if (p->latency_sensi_flag) kattr.sched_flags |= SCHED_FLAG_LATENCY_SENSITIVE;
  }
  const uint32_t ksize = patched ? static_cast<uint32_t>(sizeof(sched_attr)) : SCHED_ATTR_SIZE_VER1;
  const uint32_t size = std::min<uint32_t>(static_cast<uint32_t>(a.arg[2]), ksize);
  kattr.size = size;
  std::memcpy(uattr, &kattr, size);
  return 0;
}

// set_tid_address(tidptr) (kernel/fork.c): arg[0] = the UserWord* that exit clears and wakes
// (glibc's pthread tid word, which pthread_join() waits on); returns the thread id.
int64_t sys_set_tid_address(rq*, task_struct* p, const UserAction& a) {
  p->clear_child_tid = reinterpret_cast<UserWord*>(a.arg[0]);
  return p->pid;
}

int64_t sys_exit(rq* rq, task_struct* p, const UserAction&) {
  do_exit(rq, p);
  return 0;
}

struct Registrar {
  Registrar() {
    register_syscall(NR_read, sys_read);
    register_syscall(NR_sched_yield, sys_sched_yield);
    register_syscall(NR_nanosleep, sys_nanosleep);
    register_syscall(NR_clock_nanosleep, sys_clock_nanosleep);
    register_syscall(NR_futex, sys_futex);
    register_syscall(NR_getpid, sys_getpid);
    register_syscall(NR_setpriority, sys_setpriority);
    register_syscall(NR_exit, sys_exit);
    register_syscall(NR_set_tid_address, sys_set_tid_address);
    register_syscall(NR_sched_setattr, sys_sched_setattr);
    register_syscall(NR_sched_getattr, sys_sched_getattr);
    register_softirq_syscalls();
    register_net_syscalls();
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
  trace_sched_process_exit(rq, p);
  hrtimer_sleeper_cancel(rq->k, p);
  // exit_mm(): the last thread of a process takes its [task_shared] pages with it.
  bool last = true;
  for (const auto& t : rq->k->tasks())
    if (t->tgid == p->tgid && !t->exited) last = false;
  // exit_mm() -> exit_mm_release() -> mm_release(): with other users of the mm left, the
  // tid word is zeroed and one waiter woken (CLONE_CHILD_CLEARTID: pthread_join()), after
  // exit_signals() above dropped the thread's mm_cid.
  if (UserWord* w = p->clear_child_tid) {
    p->clear_child_tid = nullptr;
    if (!last) {
      rq->k->user_store(w, 0);
      futex_wake(rq->k, w, 1);
    }
  }
  if (last) rq->k->exit_mm(p->tgid);
  schedule(rq, /*preempt=*/false);
  // finish_task_switch() of the switch away from the dead task: put_task_struct_rcu_user().
  if (p->sched_class->task_dead) p->sched_class->task_dead(p);
}

}  // namespace kernel
