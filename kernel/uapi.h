// What simulated user space sees of the kernel: scheduling policies, syscall numbers, the
// user memory word that threads spin or futex-wait on, and the program interface the kernel
// drives (UserContext). user/ and workloads/ include only this and kernel/kernel.h.
#pragma once
#include <sched.h>  // SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_IDLE: same values as Linux uapi
#include <sys/resource.h>  // PRIO_PROCESS, PRIO_PGRP, PRIO_USER (setpriority's `which`)

#include <cerrno>   // EAGAIN, EINVAL, ENOSYS, EINTR: the Linux errno values
#include <cstdint>

#ifndef SCHED_NORMAL
#define SCHED_NORMAL 0  // include/uapi/linux/sched.h (glibc calls it SCHED_OTHER)
#endif
static_assert(SCHED_FIFO == 1 && SCHED_RR == 2 && SCHED_BATCH == 3 && SCHED_IDLE == 5,
              "policy numbers must match include/uapi/linux/sched.h");
static_assert(EAGAIN == 11 && EINVAL == 22 && ENOSYS == 38 && EINTR == 4 && ESRCH == 3 && E2BIG == 7 &&
                  EFAULT == 14 && EBADF == 9,
              "Linux errno values");
static_assert(PRIO_PROCESS == 0 && PRIO_PGRP == 1 && PRIO_USER == 2,
              "setpriority's `which` values must match include/uapi/linux/resource.h");

namespace kernel {

struct task_struct;


// x86_64 syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl).
enum : int {
  NR_read = 0,
  NR_sched_yield = 24,
  NR_nanosleep = 35,
  NR_getpid = 39,
  NR_sendto = 44,
  NR_recvmsg = 47,
  NR_clone = 56,
  NR_exit = 60,
  NR_futex = 202,
  NR_set_tid_address = 218,
  NR_execve = 59,
  NR_setpriority = 141,
  NR_prctl = 157,
  NR_clock_nanosleep = 230,
  NR_sched_setattr = 314,
  NR_sched_getattr = 315,
  NR_rseq = 334,
  NR_task_getshared = 463,     // the RFC's number (Nov 2024); a different syscall on mainline
  NR_rseq_slice_yield = 471,   // mainline 7.0
  NR_syscalls = 512,
};

// RFC "task_getshared" (Prakash Sangappa, Nov 2024): option and sched_delay values.
enum : int { TASK_SHAREDINFO = 1 };
enum : int {
  TASK_PREEMPT_DELAY_REQ = 1,
  TASK_PREEMPT_DELAY_GRANTED = 2,
  TASK_PREEMPT_DELAY_DENIED = 3,
};
// Peter Zijlstra's rseq prototype (Oct 2023): request bit in rseq->flags.
enum : uint32_t { RSEQ_CS_FLAG_DELAY_RESCHED_BIT = 3, RSEQ_CS_FLAG_DELAY_RESCHED = 1u << 3 };
// Mainline 7.0 (include/uapi/linux/rseq.h, prctl.h).
enum : uint32_t {
  RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE = 1u << 4,
  RSEQ_CS_FLAG_SLICE_EXT_ENABLED = 1u << 5,
};
enum : int {
  PR_RSEQ_SLICE_EXTENSION = 79,
  PR_RSEQ_SLICE_EXTENSION_GET = 1,
  PR_RSEQ_SLICE_EXTENSION_SET = 2,
  PR_RSEQ_SLICE_EXT_ENABLE = 1,
  ENOTSUPP = 524,  // kernel-internal errno user space sees from prctl SET when disabled
};
static_assert(RSEQ_CS_FLAG_DELAY_RESCHED == 0x8 && RSEQ_CS_FLAG_SLICE_EXT_ENABLED == 0x20,
              "bit values of the prototype and of mainline must not be confused");
enum : int { FUTEX_WAIT = 0, FUTEX_WAKE = 1 };

// struct sched_attr (include/uapi/linux/sched/types.h) with the latency_sensi_flag patch's
// trailing field; passed to sched_setattr()/sched_getattr() by address (arg[1]).
struct sched_attr {
  uint32_t size = 0;
  uint32_t sched_policy = 0;
  uint64_t sched_flags = 0;
  int32_t sched_nice = 0;
  uint32_t sched_priority = 0;
  uint64_t sched_runtime = 0;
  uint64_t sched_deadline = 0;
  uint64_t sched_period = 0;
  uint32_t sched_util_min = 0;
  uint32_t sched_util_max = 0;
  uint32_t sched_latency_sensi_flag = 0;  // the patch (bytes 56..59)
};
enum : uint32_t {
  SCHED_ATTR_SIZE_VER0 = 48,  // the first published struct
  SCHED_ATTR_SIZE_VER1 = 56,  // + util clamps: sizeof(struct sched_attr) on mainline
};
static_assert(sizeof(sched_attr) == 64, "the patched struct: 60 bytes of fields, 8-byte aligned");
enum : uint64_t {
  SCHED_FLAG_RESET_ON_FORK = 0x01,
  SCHED_FLAG_RECLAIM = 0x02,
  SCHED_FLAG_DL_OVERRUN = 0x04,
  SCHED_FLAG_KEEP_POLICY = 0x08,
  SCHED_FLAG_KEEP_PARAMS = 0x10,
  SCHED_FLAG_UTIL_CLAMP_MIN = 0x20,
  SCHED_FLAG_UTIL_CLAMP_MAX = 0x40,
  SCHED_FLAG_LATENCY_SENSITIVE = 0x80,  // the latency_sensi_flag patch
  SCHED_FLAG_ALL = 0x7f,                // mainline; the patch adds 0x80
};

// A word of user memory shared by threads of one process. Writes are seen at once by the
// writer; a thread spinning on it sees a change one cache-line transfer later (kernel/umem.cc).
struct UserWord {
  int64_t value = 0;
  int last_writer_cpu = -1;
  int64_t changed_at = 0;            // time of the last store that changed the value
  task_struct* spinners = nullptr;   // tasks spinning while value == their spin_val
  task_struct* futex_head = nullptr; // futex waiters: RT by priority, then fair, in arrival order
  task_struct* futex_tail = nullptr;
};

// The thread's struct rseq (glibc registers one per thread): the fields the model uses.
// User and kernel share it; the kernel reaches it with copy_from_user/copy_to_user, which
// cost time and can fail when the page is not resident.
struct rseq_area {
  uint32_t cpu_id = 0;
  uint32_t flags = 0;           // prototype: RSEQ_CS_FLAG_DELAY_RESCHED; 7.0: feature bits
  uint32_t mm_cid = 0;
  uint8_t slice_request = 0;    // 7.0 slice_ctrl.request (byte 28), set by user space
  uint8_t slice_granted = 0;    // 7.0 slice_ctrl.granted (byte 29), set by the kernel
};

// One step a program asks of its CPU; the kernel models its time and effects.
struct UserAction {
  enum Kind : uint8_t { Compute, SpinWhileEq, Syscall, Exit } kind = Exit;
  int nr = 0;                 // Syscall: number
  int64_t arg[4] = {0, 0, 0, 0};
  UserWord* word = nullptr;   // SpinWhileEq, futex
};

// The program of one simulated thread, driven by the kernel. Implemented in user/.
class UserContext {
 public:
  virtual ~UserContext() = default;
  // Runs the program from its last step until it asks for the next one. `ret` is the
  // result of the previous step (syscall return value; 0 otherwise). `now` is the
  // simulated time and `cpu` the CPU it runs on. The action stays valid until the next
  // call (it is read in place: a copy of a just-written action costs a store-forwarding
  // stall on every step).
  virtual const UserAction& resume(int64_t ret, int64_t now, int cpu) = 0;
  // Number of user-space locks the thread holds now (for lock-holder preemption stats).
  int locks_held = 0;
  // Thread id, set by Kernel::create_thread().
  int pid = 0;
  // The thread's rseq area, registered (as glibc does) when the thread starts, unless null.
  rseq_area* rseq = nullptr;
};

}  // namespace kernel
