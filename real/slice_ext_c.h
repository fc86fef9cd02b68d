/* The scheduler time slice extension ABI (Linux 7.0 rseq slice_ctrl, and the Nov 2024
 * task_getshared RFC) as C constants, plus a minimal C protocol over the rseq area glibc
 * registered. C11 and C++ compatible; real/slice_ext.h is the full C++ library. */
#ifndef SCHEDLAB_REAL_SLICE_EXT_C_H_
#define SCHEDLAB_REAL_SLICE_EXT_C_H_

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* prctl(2), include/uapi/linux/prctl.h in 7.0 (tip 28621ec2d46c "rseq: Add prctl() to enable
 * time slice extensions"). GET returns 1 when enabled for the calling thread, else 0. */
#define SCHEDLAB_PR_RSEQ_SLICE_EXTENSION 79
#define SCHEDLAB_PR_RSEQ_SLICE_EXTENSION_GET 1
#define SCHEDLAB_PR_RSEQ_SLICE_EXTENSION_SET 2
#define SCHEDLAB_PR_RSEQ_SLICE_EXT_ENABLE 0x01

/* Kernel-internal errno that prctl returns to user space unchanged: SET when the feature is
 * compiled out, disabled at boot (rseq_slice_ext=0) or the registration is legacy (1.13), and
 * GET too when it is compiled out. */
#define SCHEDLAB_ENOTSUPP 524

/* struct rseq (include/uapi/linux/rseq.h, 7.0, tip d7a5da7a0f7f and 3b68df978133). Offsets in
 * bytes from the start of the registered area. */
#define SCHEDLAB_RSEQ_CPU_ID_OFFSET 4
#define SCHEDLAB_RSEQ_FLAGS_OFFSET 16
#define SCHEDLAB_RSEQ_MM_CID_OFFSET 24
#define SCHEDLAB_RSEQ_SLICE_CTRL_OFFSET 28 /* u8 request at 28, u8 granted at 29 */
#define SCHEDLAB_RSEQ_ORIG_SIZE 32         /* ORIG_RSEQ_SIZE: minimum registration length */
/* Feature bits the kernel writes into rseq->flags (enum rseq_cs_flags_bit; bit 3 is a gap). */
#define SCHEDLAB_RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE (1u << 4)
#define SCHEDLAB_RSEQ_CS_FLAG_SLICE_EXT_ENABLED (1u << 5)
/* sys_rseq() flags (enum rseq_flags). */
#define SCHEDLAB_RSEQ_FLAG_UNREGISTER (1 << 0)
#define SCHEDLAB_RSEQ_FLAG_SLICE_EXT_DEFAULT_ON (1 << 1)
/* Auxiliary vector entries (include/uapi/linux/auxvec.h, since 6.3). */
#define SCHEDLAB_AT_RSEQ_FEATURE_SIZE 27
#define SCHEDLAB_AT_RSEQ_ALIGN 28

/* The RFC "task_getshared" (lore 20241113000126.967713-1-prakash.sangappa@oracle.com). */
#define SCHEDLAB_TASK_SHAREDINFO 1
#define SCHEDLAB_TASK_PREEMPT_DELAY_REQ 1     /* written by user space */
#define SCHEDLAB_TASK_PREEMPT_DELAY_GRANTED 2 /* written by the kernel */
#define SCHEDLAB_TASK_PREEMPT_DELAY_DENIED 3  /* written by the kernel: asked again while granted */

/* Syscall numbers. rseq_slice_yield is 471 on x86_64 and asm-generic (arm64) in 7.0 (tip
 * 99d2592023e5; V1..V5 of the series used 470, which became listns in 6.19). task_getshared is
 * 463 in the RFC for x86_64 and asm-generic; on mainline (6.13+) 463 is setxattrat, so it must
 * only be called when the RFC backend is asked for explicitly. */
#if defined(__x86_64__) && !defined(__ILP32__)
#define SCHEDLAB_NR_rseq 334
#define SCHEDLAB_NR_rseq_slice_yield 471
#define SCHEDLAB_NR_task_getshared 463
#define SCHEDLAB_RSEQ_SIG 0x53053053u /* arch/x86 RSEQ_SIG */
#elif defined(__aarch64__)
#define SCHEDLAB_NR_rseq 293
#define SCHEDLAB_NR_rseq_slice_yield 471
#define SCHEDLAB_NR_task_getshared 463
#define SCHEDLAB_RSEQ_SIG 0xd428bc00u /* arm64 RSEQ_SIG: brk #0x45E0 */
#else
/* Other architectures: no slice extension support compiled in (backend None). */
#define SCHEDLAB_NR_rseq (-1)
#define SCHEDLAB_NR_rseq_slice_yield (-1)
#define SCHEDLAB_NR_task_getshared (-1)
#define SCHEDLAB_RSEQ_SIG 0x53053053u
#endif

/* struct rseq_slice_ctrl: two bytes written from the same CPU by the thread and the kernel, so
 * plain stores suffice (no atomics). `granted` is written only by the kernel. */
struct schedlab_rseq_slice_ctrl {
  volatile uint8_t request;
  volatile uint8_t granted;
  uint16_t reserved;
};

/* The RFC's per-thread structure (the kernel pads it to 128 bytes). */
struct schedlab_task_sharedinfo {
  volatile unsigned short sched_delay;
};

/* glibc >= 2.35 exports __rseq_offset and __rseq_size (sys/rseq.h); __rseq_size is 0 when
 * glibc did not register (e.g. GLIBC_TUNABLES=glibc.pthread.rseq=0). They are made weak so
 * that a program built here still links and runs where they are absent (they read as NULL).
 * glibc's own declaration is used when present: 2.36 declares them without extern "C", which
 * a second declaration in C++ would conflict with. */
#if defined(__has_include)
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#define SCHEDLAB_HAVE_SYS_RSEQ_H 1
#endif
#endif
#ifdef SCHEDLAB_HAVE_SYS_RSEQ_H
#pragma weak __rseq_offset
#pragma weak __rseq_size
#else
#ifdef __cplusplus
extern "C" {
#endif
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));
#ifdef __cplusplus
}
#endif
#endif

/* The rseq area glibc registered for the calling thread, or NULL. */
static inline void* schedlab_libc_rseq_area(void) {
  char* area;
  if (&__rseq_size == NULL || &__rseq_offset == NULL || __rseq_size == 0) return NULL;
  area = (char*)__builtin_thread_pointer() + __rseq_offset;
  /* RSEQ_CPU_ID_REGISTRATION_FAILED: glibc's registration failed for this thread. */
  if (*(volatile int32_t*)(area + SCHEDLAB_RSEQ_CPU_ID_OFFSET) == -2) return NULL;
  return area;
}

/* Enables the mainline extension for the calling thread on glibc's rseq area. Returns the
 * thread's slice_ctrl, or NULL (errno set) when unavailable. Never calls prctl SET unless the
 * kernel advertises AVAILABLE: SET with inconsistent flags is answered with SIGSEGV. */
static inline struct schedlab_rseq_slice_ctrl* schedlab_slice_enable(void) {
  char* area = (char*)schedlab_libc_rseq_area();
  long on;
  if (SCHEDLAB_NR_rseq_slice_yield < 0) { /* no syscall number known for this architecture */
    errno = ENOSYS;
    return NULL;
  }
  if (area == NULL) {
    errno = ENXIO;
    return NULL;
  }
  on = prctl(SCHEDLAB_PR_RSEQ_SLICE_EXTENSION, SCHEDLAB_PR_RSEQ_SLICE_EXTENSION_GET, 0, 0, 0);
  if (on < 0) return NULL;
  if (on == 0) {
    volatile uint32_t* flags = (volatile uint32_t*)(area + SCHEDLAB_RSEQ_FLAGS_OFFSET);
    if (!(*flags & SCHEDLAB_RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE)) {
      errno = SCHEDLAB_ENOTSUPP;
      return NULL;
    }
    if (prctl(SCHEDLAB_PR_RSEQ_SLICE_EXTENSION, SCHEDLAB_PR_RSEQ_SLICE_EXTENSION_SET,
              SCHEDLAB_PR_RSEQ_SLICE_EXT_ENABLE, 0, 0) != 0)
      return NULL;
  }
  return (struct schedlab_rseq_slice_ctrl*)(area + SCHEDLAB_RSEQ_SLICE_CTRL_OFFSET);
}

#ifndef __cplusplus
/* unistd.h declares syscall() only with _DEFAULT_SOURCE; strict C11 users get it from here. */
extern long syscall(long number, ...);
#endif

/* The recommended protocol (Documentation/userspace-api/rseq.rst): request, compiler barrier,
 * critical section, barrier, clear request, then yield if the kernel granted. */
static inline void schedlab_slice_request(struct schedlab_rseq_slice_ctrl* c) {
  c->request = 1;
  __asm__ __volatile__("" ::: "memory");
}

/* Returns 1 if the extension had been granted (the CPU was then given back), else 0. */
static inline int schedlab_slice_release(struct schedlab_rseq_slice_ctrl* c) {
  __asm__ __volatile__("" ::: "memory");
  c->request = 0;
  __asm__ __volatile__("" ::: "memory");
  if (!c->granted) return 0;
  syscall(SCHEDLAB_NR_rseq_slice_yield);
  return 1;
}

#endif /* SCHEDLAB_REAL_SLICE_EXT_C_H_ */
