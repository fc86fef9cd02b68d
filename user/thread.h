// A simulated user thread: the program it runs and the calls that program makes. Blocking
// verbs are awaitables, each one kernel action; memory operations are immediate.
// Created by a workload, handed to Kernel::create_thread(), then driven by the kernel.
#pragma once
#include <cassert>
#include <coroutine>
#include <cstdint>

#include "kernel/kernel.h"
#include "kernel/uapi.h"
#include "sim/rng.h"
#include "user/program.h"

namespace user {

using kernel::UserWord;

class Thread : public kernel::UserContext {
 public:
  // Awaiting one runs a kernel action and yields its result (syscall return value). The verb
  // that makes it writes the action into the thread at once (the kernel reads it there), so
  // await each verb where it is called, before calling another (checked).
  struct Action {
    Thread* t;
    uint64_t seq;  // the verb's number: no other verb may come between it and its await
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) noexcept {
      assert(t->verbs_ == seq && "a verb was made and not awaited before the next one");
      t->current_ = h;
    }
    int64_t await_resume() const noexcept { return t->ret_; }
  };

  Thread(kernel::Kernel* k, sim::Rng rng) : k_(k), rng_(rng) { UserContext::rseq = &rseq_area_; }
  // Sets the program; REQUIRES: called once, before the thread is created in the kernel.
  void start(Program p) {
    program_ = std::move(p);
    current_ = program_.handle();
  }

  // ---- Blocking verbs. ----
  // Compute a verb's argument into a variable first when it needs a conditional: g++ 12
  // evaluates both arms of one inside an awaited operand (tests/CMakeLists.txt checks).
  // Blocks the calling thread until it has done `ns` of user work (preemptible).
  Action compute(int64_t ns) { return act(kernel::UserAction::Compute, 0, ns); }
  // Busy-waits in user mode while *w == v; returns once the change is visible here.
  Action spin_while_eq(UserWord* w, int64_t v) {
    return act(kernel::UserAction::SpinWhileEq, 0, v, 0, 0, 0, w);
  }
  Action sched_yield() { return syscall(kernel::NR_sched_yield); }
  // read() of data that arrives `ns` from now (a disk's completion, a network peer's reply):
  // blocks until the arrival's interrupt on this CPU wakes it. Unlike a sleep, no timer slack.
  Action read_after(int64_t ns) { return syscall(kernel::NR_read, ns); }
  // Sleeps for `ns` (nanosleep).
  Action nanosleep(int64_t ns) { return syscall(kernel::NR_nanosleep, ns); }
  // Sleeps until absolute simulated time `t` (clock_nanosleep with TIMER_ABSTIME).
  Action sleep_until(int64_t t) { return syscall(kernel::NR_clock_nanosleep, 1, t); }
  // Blocks while *w == v (FUTEX_WAIT); returns 0 when woken or -EAGAIN.
  Action futex_wait(UserWord* w, int64_t v) {
    return act(kernel::UserAction::Syscall, kernel::NR_futex, kernel::FUTEX_WAIT, v, 0, 0, w);
  }
  // Wakes up to n waiters of w (FUTEX_WAKE); returns how many.
  Action futex_wake(UserWord* w, int64_t n) {
    return act(kernel::UserAction::Syscall, kernel::NR_futex, kernel::FUTEX_WAKE, n, 0, 0, w);
  }
  // setpriority(which, who, nice): with PRIO_PROCESS, sets the nice value of thread `who`
  // (0: the caller); returns 0, -ESRCH (no such thread) or -EINVAL (other `which`).
  Action setpriority(int which, int64_t who, int64_t nice) {
    return syscall(kernel::NR_setpriority, which, who, nice);
  }
  // sendto() of `len` bytes whose kernel path takes `kernel_ns` with BHs disabled (raising
  // `net_tx_ns` of NET_TX work there if > 0) and ends in local_bh_enable(), which may run the
  // CPU's pending softirqs; returns len.
  Action sendto(int64_t len, int64_t kernel_ns, int64_t net_tx_ns = 0) {
    return syscall(kernel::NR_sendto, len, kernel_ns, net_tx_ns);
  }
  // recvmsg() of one datagram from UDP socket `sock` (Kernel::add_udp_socket()) into a buffer
  // of `len` bytes: blocks while the socket has none; returns the bytes copied, and stores the
  // datagram's arrival at the NIC (SO_TIMESTAMPING's hardware receive timestamp) in
  // *rx_timestamp if given.
  Action recvmsg(int sock, int64_t len, int64_t* rx_timestamp = nullptr) {
    return syscall(kernel::NR_recvmsg, sock, len, reinterpret_cast<int64_t>(rx_timestamp));
  }
  // sched_setattr(pid, attr, flags) / sched_getattr(pid, attr, size, flags); pid 0 = self.
  Action sched_setattr(int pid, kernel::sched_attr* attr, unsigned flags = 0) {
    return syscall(kernel::NR_sched_setattr, pid, reinterpret_cast<int64_t>(attr), flags);
  }
  Action sched_getattr(int pid, kernel::sched_attr* attr, unsigned size = sizeof(kernel::sched_attr),
                       unsigned flags = 0) {
    return syscall(kernel::NR_sched_getattr, pid, reinterpret_cast<int64_t>(attr), size, flags);
  }
  // A generic system call, for syscalls that later proposals add.
  Action syscall(int nr, int64_t a0 = 0, int64_t a1 = 0, int64_t a2 = 0, int64_t a3 = 0) {
    return act(kernel::UserAction::Syscall, nr, a0, a1, a2, a3);
  }

  // ---- Immediate operations. ----
  int64_t now() const { return now_; }
  int cpu() const { return cpu_; }
  sim::Rng& rng() { return rng_; }
  int64_t load(const UserWord* w) const { return w->value; }
  void store(UserWord* w, int64_t v) { k_->user_store(w, v); }
  bool cmpxchg(UserWord* w, int64_t expected, int64_t desired) {
    return k_->user_cmpxchg(w, expected, desired);
  }
  int64_t fetch_add(UserWord* w, int64_t d) { return k_->user_fetch_add(w, d); }
  int64_t exchange(UserWord* w, int64_t v) {
    const int64_t old = w->value;
    k_->user_store(w, v);
    return old;
  }
  // The thread's registered rseq area, or nullptr if the kernel runs without rseq.
  kernel::rseq_area* rseq() const { return UserContext::rseq; }
  // The thread id the kernel gave this thread.
  int pid() const { return UserContext::pid; }
  // A write to trace_marker: opens a span `name` (static storage) in the trace, or closes
  // the innermost one (nullptr). Nothing when the run is not traced.
  void trace_span(const char* name) { k_->trace_user_span(name); }

  // kernel::UserContext
  const kernel::UserAction& resume(int64_t ret, int64_t now, int cpu) override;

 private:
  // Writes every field of the next action, field by field (see Action), and numbers it.
  Action act(kernel::UserAction::Kind kind, int nr, int64_t a0, int64_t a1 = 0, int64_t a2 = 0,
             int64_t a3 = 0, UserWord* w = nullptr) {
    pending_.kind = kind;
    pending_.nr = nr;
    pending_.arg[0] = a0;
    pending_.arg[1] = a1;
    pending_.arg[2] = a2;
    pending_.arg[3] = a3;
    pending_.word = w;
    return Action{this, ++verbs_};
  }

  kernel::Kernel* k_;
  sim::Rng rng_;
  kernel::rseq_area rseq_area_;
  Program program_;
  std::coroutine_handle<> current_;  // innermost suspended coroutine
  kernel::UserAction pending_;  // the action the program awaits (Exit if none)
  uint64_t verbs_ = 0;          // verbs made so far
  int64_t ret_ = 0;
  int64_t now_ = 0;
  int cpu_ = 0;
};

}  // namespace user
