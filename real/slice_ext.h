// Scheduler time slice extension for real kernels, header-only: per-thread backend selection
// (Linux 7.0 rseq slice_ctrl, the task_getshared RFC, or none), an RAII request guard and a
// TTAS spin lock whose critical sections ask not to be preempted. docs/real.md explains it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "real/slice_ext_c.h"

namespace real {

// Linux 7.0.10 and later offer the mainline extension only to rseq registrations longer than
// 32 bytes (RSEQ ABI v2). glibc 2.35-2.40 register 32 bytes: with them the selection reports
// why mainline is unavailable; GLIBC_TUNABLES=glibc.pthread.rseq=0 makes this library
// register a v2 area itself (AT_RSEQ_FEATURE_SIZE bytes, AT_RSEQ_ALIGN-aligned).
//
// Thread safety: the selection, the protocol state and the counters belong to the calling
// thread. Each thread calls init_thread() once before its first guard or lock; a thread that
// never does runs with kNone. SliceSpinLock objects are shared between threads as usual.

enum class Backend : uint8_t {
  kNone = 0,      // no kernel support: the guard only counts
  kMainline = 1,  // Linux 7.0: prctl(PR_RSEQ_SLICE_EXTENSION) + rseq slice_ctrl + rseq_slice_yield
  kRfc = 2,       // Nov 2024 RFC: task_getshared(463) shared word + sched_yield
};

enum class Request : uint8_t {
  kAuto,      // mainline if the kernel supports it, else none. Never probes the RFC.
  kMainline,  // mainline or none
  kRfc,       // the RFC or none: calls syscall 463, which mainline uses for another call
  kNone,      // no kernel calls at all
};

inline const char* backend_name(Backend b) {
  switch (b) {
    case Backend::kMainline: return "mainline";
    case Backend::kRfc: return "rfc";
    case Backend::kNone: break;
  }
  return "none";
}

// Per-thread counts. A request is counted when its critical section ends (release), so the
// entry costs one store. grants <= requests; yields == grants (every grant is answered by a
// yield); denials only exist for the RFC (the kernel's TASK_PREEMPT_DELAY_DENIED).
struct Counters {
  uint64_t requests = 0;
  uint64_t grants = 0;
  uint64_t yields = 0;
  uint64_t denials = 0;
};

// The kernel interface, as function pointers so that tests can fake kernel answers. Each call
// returns the kernel's result or -errno, like the raw syscall.
struct KernelOps {
  long (*prctl)(int option, unsigned long arg2, unsigned long arg3);  // arg4 = arg5 = 0
  long (*syscall)(long nr, long a1, long a2, long a3, long a4);       // further args 0
  void* (*libc_rseq_area)();  // the rseq area glibc registered for this thread, or nullptr
  unsigned long (*getauxval)(unsigned long type);  // 0 when absent
};

// The real kernel. Lives forever.
inline const KernelOps& host_kernel_ops();

struct Rejection {
  Backend backend;
  std::string reason;
};

struct Selection {
  Backend backend = Backend::kNone;
  std::vector<Rejection> rejected;  // one entry per backend not in use, saying why

  // The reason `b` was rejected, or "" if it was not.
  std::string reason(Backend b) const {
    for (const Rejection& r : rejected)
      if (r.backend == b) return r.reason;
    return "";
  }
};

// Selects and enables a backend for the calling thread; never crashes or blocks on a kernel
// without support (every failure becomes kNone with a reason). Keeps the counters. `ops` must
// outlive the thread's use of the library. Calling again re-selects.
inline Selection init_thread(Request r = Request::kAuto, const KernelOps& ops = host_kernel_ops());

inline Backend thread_backend();
inline Counters thread_counters();
inline void reset_thread_counters();

// The calling thread's rseq area: glibc's, else one this library registers (needs a kernel
// >= 4.18); nullptr if neither. cpu_id is at SCHEDLAB_RSEQ_CPU_ID_OFFSET.
inline void* thread_rseq_area(const KernelOps& ops = host_kernel_ops());

namespace detail {

// The calling thread's protocol state. Constant-initialised and trivially destructible, so an
// access is a plain thread-pointer-relative address: no TLS init guard on the fast path.
struct ThreadSlice {
  // kMainline: &slice_ctrl.request (granted is word[1]); kRfc: &sched_delay; kNone: nullptr.
  volatile uint8_t* word = nullptr;
  Backend backend = Backend::kNone;
  Counters counters;
  const KernelOps* ops = nullptr;  // for the yield on the slow path; set with `word`
};

inline constinit thread_local ThreadSlice tls_slice;

// What the kernel answered to a request, as read when it ends.
enum Answer : uint8_t { kNoAnswer = 0, kGranted = 1, kDenied = 2 };

// Slow paths, out of line (in-class definitions take noinline without a warning) so the fast
// path stays a few instructions. They count and give the CPU back.
struct SlowPath {
  [[gnu::noinline, gnu::cold]] static Answer mainline_granted(ThreadSlice* s) {
    ++s->counters.grants;
    ++s->counters.yields;
    // Returns 0 if the kernel revoked the grant between our read and the call (a race the
    // protocol accepts: the CPU was given back already), else 1.
    s->ops->syscall(SCHEDLAB_NR_rseq_slice_yield, 0, 0, 0, 0);
    return kGranted;
  }
  [[gnu::noinline, gnu::cold]] static Answer rfc_answered(ThreadSlice* s, unsigned value) {
    if (value == SCHEDLAB_TASK_PREEMPT_DELAY_DENIED) {
      ++s->counters.denials;
      return kDenied;
    }
    if (value != SCHEDLAB_TASK_PREEMPT_DELAY_GRANTED) return kNoAnswer;  // not an RFC value
    ++s->counters.grants;
    ++s->counters.yields;
    s->ops->syscall(SYS_sched_yield, 0, 0, 0, 0);  // the RFC: yield at once when granted
    return kGranted;
  }
};

inline void request(ThreadSlice* s) {
  if (s->word != nullptr) *s->word = 1;  // slice_ctrl.request = 1, or sched_delay = REQ (LE)
  // Keeps the critical section's accesses after the request (same CPU: no hardware fence).
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

// Ends the request without counting it; yields if it had been granted.
inline Answer finish(ThreadSlice* s) {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  // Loaded once: a store through the (char-typed) word could alias *s, forcing reloads.
  volatile uint8_t* const w = s->word;
  if (s->backend == Backend::kMainline) {
    // Clear first, then read: a grant after the clear is impossible, one before it is seen.
    w[0] = 0;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (__builtin_expect(w[1] != 0, 0)) return SlowPath::mainline_granted(s);
  } else if (s->backend == Backend::kRfc) {
    // The RFC protocol: read the answer, then write 0 (the kernel never resets the word).
    volatile uint16_t* const w16 = reinterpret_cast<volatile uint16_t*>(w);
    const unsigned v = *w16;
    *w16 = 0;
    if (__builtin_expect(v >= SCHEDLAB_TASK_PREEMPT_DELAY_GRANTED, 0))
      return SlowPath::rfc_answered(s, v);
  }
  return kNoAnswer;
}

// Ends a critical section's request; true if it had been granted (the CPU was then yielded).
inline bool release(ThreadSlice* s) {
  ++s->counters.requests;
  return finish(s) == kGranted;
}

// Ends a request whose critical section never started (a failed lock attempt). It is counted
// only if the kernel answered it, so that for the spin lock requests == acquisitions unless
// a grant or denial landed between the request and the failed exchange.
inline bool withdraw(ThreadSlice* s) {
  const Answer a = finish(s);
  if (a != kNoAnswer) ++s->counters.requests;
  return a == kGranted;
}

}  // namespace detail

// Spin-wait hint: lets the sibling hyperthread run and saves power while the lock is held.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

// Asks the kernel not to preempt the calling thread until slice_release(). Do not nest.
inline void slice_request() { detail::request(&detail::tls_slice); }
// Returns true if the kernel had granted extra time; the CPU has then been given back
// (rseq_slice_yield on mainline, sched_yield on the RFC).
inline bool slice_release() { return detail::release(&detail::tls_slice); }
// Ends a request whose critical section did not happen (e.g. the lock was taken by another
// thread); counted only if the kernel had answered it. Returns true if it had been granted.
inline bool slice_withdraw() { return detail::withdraw(&detail::tls_slice); }

// RAII form: requests on construction, releases (and yields if granted) on destruction.
// Guards do not nest: an inner guard would end the outer request.
class SliceGuard {
 public:
  SliceGuard() : s_(&detail::tls_slice) { detail::request(s_); }
  ~SliceGuard() { detail::release(s_); }
  SliceGuard(const SliceGuard&) = delete;
  SliceGuard& operator=(const SliceGuard&) = delete;

 private:
  detail::ThreadSlice* s_;
};

// Test-and-test-and-set spin lock (one optimistic exchange first, then read-only spinning)
// whose critical section is covered by an extension request. Safe to share between threads.
// The request is made before the exchange that takes the lock, so a preemption right after
// taking it is covered too; a failed attempt withdraws the request (yielding if granted) before
// spinning, so a waiter never holds a request. Holders must not take a second SliceSpinLock.
class SliceSpinLock {
 public:
  void lock() {
    detail::ThreadSlice* s = &detail::tls_slice;
    for (;;) {
      detail::request(s);
      if (!word_.exchange(1, std::memory_order_acquire)) return;
      detail::withdraw(s);
      while (word_.load(std::memory_order_relaxed) != 0) cpu_relax();
    }
  }
  bool try_lock() {
    if (word_.load(std::memory_order_relaxed) != 0) return false;  // no request for a busy lock
    detail::ThreadSlice* s = &detail::tls_slice;
    detail::request(s);
    if (!word_.exchange(1, std::memory_order_acquire)) return true;
    detail::withdraw(s);
    return false;
  }
  void unlock() {
    word_.store(0, std::memory_order_release);
    detail::release(&detail::tls_slice);
  }

 private:
  std::atomic<uint32_t> word_{0};
};

// Test hooks. TEST_use_word points the calling thread's protocol at `word` (a slice_ctrl for
// kMainline, a sched_delay for kRfc) without asking the kernel, so the protocol's cost can be
// measured, and a fake kernel (a signal handler on the same thread) can grant. A granted
// release then calls ops.syscall for the yield. TEST_reset_thread forgets the selection and
// unregisters an rseq area the library registered.
inline void TEST_use_word(Backend protocol, void* word, const KernelOps& ops = host_kernel_ops());
inline void TEST_reset_thread();

}  // namespace real

#include "real/slice_ext_select.h"  // IWYU pragma: export
