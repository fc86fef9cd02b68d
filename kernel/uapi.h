// What simulated user space sees of the kernel: scheduling policies, syscall numbers, the
// user memory word that threads spin or futex-wait on, and the program interface the kernel
// drives (UserContext). user/ and workloads/ include only this and kernel/kernel.h.
#pragma once
#include <sched.h>  // SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_IDLE: same values as Linux uapi

#include <cerrno>   // EAGAIN, EINVAL, ENOSYS, EINTR: the Linux errno values
#include <cstdint>

#ifndef SCHED_NORMAL
#define SCHED_NORMAL 0  // include/uapi/linux/sched.h (glibc calls it SCHED_OTHER)
#endif
static_assert(SCHED_FIFO == 1 && SCHED_RR == 2 && SCHED_BATCH == 3 && SCHED_IDLE == 5,
              "policy numbers must match include/uapi/linux/sched.h");
static_assert(EAGAIN == 11 && EINVAL == 22 && ENOSYS == 38 && EINTR == 4, "Linux errno values");

namespace kernel {

struct task_struct;


// x86_64 syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl).
enum : int {
  NR_sched_yield = 24,
  NR_nanosleep = 35,
  NR_getpid = 39,
  NR_exit = 60,
  NR_futex = 202,
  NR_clock_nanosleep = 230,
  NR_syscalls = 512,
};
enum : int { FUTEX_WAIT = 0, FUTEX_WAKE = 1 };

// A word of user memory shared by threads of one process. Writes are seen at once by the
// writer; a thread spinning on it sees a change one cache-line transfer later (kernel/umem.cc).
struct UserWord {
  int64_t value = 0;
  int last_writer_cpu = -1;
  task_struct* spinners = nullptr;   // tasks spinning while value == their spin_val
  task_struct* futex_head = nullptr; // futex waiters, FIFO
  task_struct* futex_tail = nullptr;
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
  // simulated time and `cpu` the CPU it runs on.
  virtual UserAction resume(int64_t ret, int64_t now, int cpu) = 0;
  // Number of user-space locks the thread holds now (for lock-holder preemption stats).
  int locks_held = 0;
  // Thread id, set by Kernel::create_thread().
  int pid = 0;
};

}  // namespace kernel
