// rseq registration and the slice extension syscalls: task_getshared() (RFC), prctl
// PR_RSEQ_SLICE_EXTENSION and rseq_slice_yield() (7.0), and what execve() resets.
// Mirrors kernel/rseq.c (v7.0) and the RFC's kernel/task_shared.c.
#include "kernel/kernel_impl.h"
#include "kernel/slice_ext.h"
#include "kernel/syscalls.h"
#include "kernel/task_shared.h"

namespace kernel {

namespace {

// rseq_register(): a registration longer than ORIG_RSEQ_SIZE (32) is RSEQ ABI v2 (7.0.10+ on
// generic-entry architectures such as x86). 7.0 as released treats every registration the
// optimized way and offers slice extensions to all of them; kernels before 7.0 have neither.
bool rseq_register_v2(const KernelImpl* k) {
  const SliceExtConfig& c = k->cfg_.slice_ext;
  if (k->cfg_.version != KernelVersion::V7_0) return false;
  return !c.require_rseq_v2 || c.rseq_len > 32;
}

// Resets what registration resets: slice state, the word, the advertised feature bits.
// sys_rseq() writes slice_ctrl and advertises RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE only for a v2
// registration: a legacy (32-byte) one may keep non-ABI data at bytes 28-31 (TCMalloc).
void rseq_reset(KernelImpl* k, task_struct* p) {
  rseq_area* rs = p->user ? p->user->rseq : nullptr;
  p->slice.granted = p->slice.enabled = p->slice.yielded = p->slice.syscall_work = false;
  p->slice.rseq_v2 = rs && rseq_register_v2(k);
  if (!rs) return;
  const bool slice_ctrl = slice_ext(k)->rseq_slice_ctrl;
  if (!slice_ctrl || p->slice.rseq_v2) rs->slice_request = rs->slice_granted = 0;
  rs->flags = slice_ctrl && p->slice.rseq_v2 ? unsigned{RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE} : 0u;
}

// task_getshared(option, flags, uaddr): arg[0] option, arg[1] flags (unused), arg[2] the
// address of an int64 that receives the address of this thread's sched_delay word.
int64_t sys_task_getshared(rq* rq, task_struct* p, const UserAction& a) {
  KernelImpl* k = rq->k;
  if (!(slice_ext(k)->syscalls & SLICE_EXT_SYS_TASK_GETSHARED)) return -ENOSYS;  // not an RFC kernel
  if (a.arg[0] != TASK_SHAREDINFO) return -EINVAL;
  int64_t* uaddr = reinterpret_cast<int64_t*>(a.arg[2]);
  if (!p->slice.shared) {
    if (p->slice.fatal_signal) return -EINTR;  // mmap_write_lock_killable() failed
    int page = -1, slot = -1;
    UserWord* w = task_shared_alloc(p->mm, k->cfg_.slice_ext.page_limit, &page, &slot);
    if (!w) return -ENOMEM;
    p->slice.shared = w;
    p->slice.shared_page = page;
    p->slice.shared_slot = slot;
  }
  if (!uaddr) return -EFAULT;  // copy_to_user() of the address failed
  *uaddr = reinterpret_cast<int64_t>(p->slice.shared);
  return 0;
}

// prctl(PR_RSEQ_SLICE_EXTENSION, GET|SET, flags, 0, 0): arg[0..4].
int64_t sys_prctl(rq* rq, task_struct* p, const UserAction& a) {
  KernelImpl* k = rq->k;
  if (a.arg[0] != PR_RSEQ_SLICE_EXTENSION) return -EINVAL;
  if (k->cfg_.version != KernelVersion::V7_0) return -EINVAL;  // option unknown before 7.0
  if (a.arg[3] != 0) return -EINVAL;
  // CONFIG_RSEQ_SLICE_EXTENSION=n: the stub rseq_slice_extension_prctl() says ENOTSUPP to
  // every request, GET included.
  if (!(slice_ext(k)->syscalls & SLICE_EXT_SYS_PRCTL)) return -ENOTSUPP;
  if (a.arg[1] == PR_RSEQ_SLICE_EXTENSION_GET) {
    if (a.arg[2] != 0) return -EINVAL;
    return p->slice.enabled ? PR_RSEQ_SLICE_EXT_ENABLE : 0;
  }
  if (a.arg[1] != PR_RSEQ_SLICE_EXTENSION_SET) return -EINVAL;
  if (a.arg[2] & ~static_cast<int64_t>(PR_RSEQ_SLICE_EXT_ENABLE)) return -EINVAL;
  rseq_area* rs = p->user ? p->user->rseq : nullptr;
  if (!rs || !k->cfg_.slice_ext.rseq_registered) return -ENXIO;
  if (!p->slice.rseq_v2) return -ENOTSUPP;  // 7.0.10+: a legacy registration (rseq_v2())
  const bool on = a.arg[2] & PR_RSEQ_SLICE_EXT_ENABLE;
  if (on == p->slice.enabled) return 0;
  p->slice.enabled = on;
  rs->flags = RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE | (on ? unsigned{RSEQ_CS_FLAG_SLICE_EXT_ENABLED} : 0u);
  return 0;
}

// rseq_slice_yield(): the entry work already rescheduled; report whether the grant was
// still active (T10).
int64_t sys_rseq_slice_yield(rq* rq, task_struct* p, const UserAction&) {
  if (!(slice_ext(rq)->syscalls & SLICE_EXT_SYS_RSEQ_SLICE_YIELD)) return -ENOSYS;
  const bool y = p->slice.yielded;
  p->slice.yielded = false;
  return y ? 1 : 0;
}

// execve(): the new image has no [task_shared] structure and a freshly registered rseq
// area (glibc registers again); pending grants are gone.
int64_t sys_execve(rq* rq, task_struct* p, const UserAction&) {
  task_shared_release(p);
  rseq_reset(rq->k, p);
  return 0;
}

}  // namespace

// rseq_sched_switch_event() (include/linux/rseq.h, 7.0.10): with an rseq area registered, the
// optimized (v2) mode raises the event only when the task entered the kernel by interrupt from
// user mode or its IDs changed (migration; mm_cid changes are not modelled apart from that);
// a syscall that blocks, or is preempted at its exit, on the same CPU raises none, so the
// exit path leaves slice_ctrl as it is. Legacy mode updates the IDs after every switch.
void rseq_sched_switch_event(task_struct* t) {
  if (!t->user || !t->user->rseq) return;  // has_rseq
  slice_ext_task& s = t->slice;
  if (s.rseq_v2) {
    if (s.user_irq || s.ids_changed) s.sched_switch = true;
  } else {
    s.ids_changed = s.sched_switch = true;
  }
}

void rseq_register_at_start(rq* rq, task_struct* p) {
  if (!rq->k->cfg_.slice_ext.rseq_registered && p->user) p->user->rseq = nullptr;
  rseq_reset(rq->k, p);
}

void register_rseq_syscalls() {
  register_syscall(NR_task_getshared, sys_task_getshared);
  register_syscall(NR_prctl, sys_prctl);
  register_syscall(NR_rseq_slice_yield, sys_rseq_slice_yield);
  register_syscall(NR_execve, sys_execve);
}

}  // namespace kernel
