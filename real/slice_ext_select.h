// Backend selection and the slow paths of real/slice_ext.h: which kernel interface a thread
// uses, found by asking the kernel (through KernelOps) and turning every refusal into a reason.
// Included at the end of real/slice_ext.h; include that header instead.
#pragma once

#include <sys/auxv.h>

#include <cerrno>
#include <cstring>

#include "real/slice_ext.h"

namespace real {
namespace detail {

inline long host_prctl(int option, unsigned long arg2, unsigned long arg3) {
  const int r = ::prctl(option, arg2, arg3, 0UL, 0UL);
  return r == -1 ? -errno : r;
}

inline long host_syscall(long nr, long a1, long a2, long a3, long a4) {
  const long r = ::syscall(nr, a1, a2, a3, a4, 0L, 0L);
  return r == -1 ? -errno : r;
}

inline void* host_libc_rseq_area() { return schedlab_libc_rseq_area(); }

inline unsigned long host_getauxval(unsigned long type) { return ::getauxval(type); }

inline constexpr KernelOps kHostOps = {host_prctl, host_syscall, host_libc_rseq_area,
                                       host_getauxval};

// "EINVAL" etc. for the errors the selection can meet; the number otherwise.
inline std::string errno_name(long e) {
  switch (e) {
    case EINVAL: return "EINVAL";
    case ENOSYS: return "ENOSYS";
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case EFAULT: return "EFAULT";
    case ENXIO: return "ENXIO";
    case EBUSY: return "EBUSY";
    case ENOMEM: return "ENOMEM";
    case EINTR: return "EINTR";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case SCHEDLAB_ENOTSUPP: return "ENOTSUPP";
  }
  return "errno " + std::to_string(e);
}

// An rseq area this library registered because glibc had not (glibc < 2.35, or
// GLIBC_TUNABLES=glibc.pthread.rseq=0). Unregistered when the thread exits, before its TLS is
// freed. Only the selection touches it, so its TLS init guard stays off the fast path.
struct OwnRseq {
  // 64: AT_RSEQ_ALIGN in 7.0 (feature size 33 rounded up to a power of two).
  alignas(64) unsigned char area[64] = {};
  unsigned len = 0;  // registered length; 0 = not registered
  const KernelOps* ops = nullptr;

  ~OwnRseq() { unregister(); }
  void unregister() {
    if (len != 0)
      ops->syscall(SCHEDLAB_NR_rseq, reinterpret_cast<long>(area), len,
                   SCHEDLAB_RSEQ_FLAG_UNREGISTER, SCHEDLAB_RSEQ_SIG);
    len = 0;
  }
};

inline thread_local OwnRseq own_rseq;

inline void* find_rseq_area(const KernelOps& ops, std::string* why) {
  if (void* a = ops.libc_rseq_area()) return a;
  OwnRseq& own = own_rseq;
  if (own.len != 0) return own.area;
  if (SCHEDLAB_NR_rseq < 0) {
    *why = "no rseq syscall number for this architecture";
    return nullptr;
  }
  // Register everything the kernel knows (AT_RSEQ_FEATURE_SIZE, 33 on 7.0) so it treats the
  // area as a full registration; kernels before 6.3 have no auxv entry and accept only 32.
  const unsigned long feature = ops.getauxval(SCHEDLAB_AT_RSEQ_FEATURE_SIZE);
  unsigned len = SCHEDLAB_RSEQ_ORIG_SIZE;
  if (feature > len && feature <= sizeof(own.area)) len = static_cast<unsigned>(feature);
  std::memset(own.area, 0, sizeof(own.area));
  const uint32_t uninitialized = static_cast<uint32_t>(-1);  // RSEQ_CPU_ID_UNINITIALIZED
  std::memcpy(own.area + SCHEDLAB_RSEQ_CPU_ID_OFFSET, &uninitialized, sizeof(uninitialized));
  long r = ops.syscall(SCHEDLAB_NR_rseq, reinterpret_cast<long>(own.area), len, 0,
                       SCHEDLAB_RSEQ_SIG);
  if (r == -EINVAL && len != SCHEDLAB_RSEQ_ORIG_SIZE) {
    len = SCHEDLAB_RSEQ_ORIG_SIZE;
    r = ops.syscall(SCHEDLAB_NR_rseq, reinterpret_cast<long>(own.area), len, 0,
                    SCHEDLAB_RSEQ_SIG);
  }
  if (r < 0) {
    *why = "glibc registered none and rseq(2) failed with " + errno_name(-r) +
           (r == -EBUSY ? " (another library registered an area at an unknown address)" : "");
    return nullptr;
  }
  own.len = len;
  own.ops = &ops;
  return own.area;
}

inline bool select_mainline(const KernelOps& ops, ThreadSlice* s, std::string* why) {
  if (SCHEDLAB_NR_rseq_slice_yield < 0) {
    *why = "no rseq_slice_yield syscall number for this architecture";
    return false;
  }
  const long on = ops.prctl(SCHEDLAB_PR_RSEQ_SLICE_EXTENSION,
                            SCHEDLAB_PR_RSEQ_SLICE_EXTENSION_GET, 0);
  if (on < 0) {
    switch (-on) {
      case EINVAL:
        *why = "prctl(PR_RSEQ_SLICE_EXTENSION) is unknown to this kernel (EINVAL): needs Linux 7.0+";
        break;
      case SCHEDLAB_ENOTSUPP:
        *why = "kernel built without CONFIG_RSEQ_SLICE_EXTENSION (prctl: ENOTSUPP)";
        break;
      default:
        *why = "prctl(PR_RSEQ_SLICE_EXTENSION, GET) failed with " + errno_name(-on);
    }
    return false;
  }
  std::string area_why;
  char* area = static_cast<char*>(find_rseq_area(ops, &area_why));
  if (area == nullptr) {
    *why = "no rseq area: " + area_why;
    return false;
  }
  if (on == 0) {
    // prctl SET answers an area whose flags disagree with the kernel with SIGSEGV, so only ask
    // when the kernel advertised the feature in this very area.
    const uint32_t flags =
        *reinterpret_cast<volatile uint32_t*>(area + SCHEDLAB_RSEQ_FLAGS_OFFSET);
    if ((flags & SCHEDLAB_RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE) == 0) {
      // 7.0.10+ advertise it only to registrations longer than 32 bytes (RSEQ ABI v2), which
      // glibc before 2.41 does not make; without glibc's area this library registers one.
      *why = "the kernel does not advertise RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE in this thread's "
             "rseq area: disabled at boot (rseq_slice_ext=0), or a 32-byte legacy registration "
             "on 7.0.10+ (glibc before 2.41; run with GLIBC_TUNABLES=glibc.pthread.rseq=0 so "
             "this library registers a v2 area itself, or use glibc 2.41+)";
      return false;
    }
    const long r = ops.prctl(SCHEDLAB_PR_RSEQ_SLICE_EXTENSION,
                             SCHEDLAB_PR_RSEQ_SLICE_EXTENSION_SET,
                             SCHEDLAB_PR_RSEQ_SLICE_EXT_ENABLE);
    if (r < 0) {
      switch (-r) {
        case SCHEDLAB_ENOTSUPP:
          *why = "prctl SET refused with ENOTSUPP: disabled at boot (rseq_slice_ext=0) or a "
                 "legacy 32-byte rseq registration on 7.0.10+ (see "
                 "GLIBC_TUNABLES=glibc.pthread.rseq=0)";
          break;
        case ENXIO: *why = "prctl SET found no rseq area registered (ENXIO)"; break;
        default: *why = "prctl(PR_RSEQ_SLICE_EXTENSION, SET) failed with " + errno_name(-r);
      }
      return false;
    }
  }
  s->word = reinterpret_cast<volatile uint8_t*>(area + SCHEDLAB_RSEQ_SLICE_CTRL_OFFSET);
  s->word[0] = 0;  // request is ours to write; granted (word[1]) is the kernel's
  s->backend = Backend::kMainline;
  return true;
}

inline bool select_rfc(const KernelOps& ops, ThreadSlice* s, std::string* why) {
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
  *why = "the byte-store request of this library assumes a little-endian sched_delay";
  return false;
#endif
  if (SCHEDLAB_NR_task_getshared < 0) {
    *why = "no task_getshared syscall number for this architecture";
    return false;
  }
  uint64_t uaddr = 0;  // the kernel stores the user address of the thread's structure here
  const long r = ops.syscall(SCHEDLAB_NR_task_getshared, SCHEDLAB_TASK_SHAREDINFO, 0,
                             reinterpret_cast<long>(&uaddr), 0);
  if (r == -ENOSYS) {
    *why = "task_getshared (syscall 463) is not implemented (ENOSYS): kernel without the RFC";
    return false;
  }
  if (r != 0 || uaddr == 0) {
    *why = "syscall 463 answered " + (r < 0 ? errno_name(-r) : std::to_string(r)) +
           " without an address: not the RFC's task_getshared (mainline 6.13+ has setxattrat "
           "there)";
    return false;
  }
  s->word = reinterpret_cast<volatile uint8_t*>(static_cast<uintptr_t>(uaddr));
  *reinterpret_cast<volatile uint16_t*>(s->word) = 0;
  s->backend = Backend::kRfc;
  return true;
}

}  // namespace detail

inline const KernelOps& host_kernel_ops() { return detail::kHostOps; }

inline Selection init_thread(Request r, const KernelOps& ops) {
  detail::ThreadSlice* s = &detail::tls_slice;
  // Forget the previous selection first, so any failure below leaves kNone.
  s->word = nullptr;
  s->backend = Backend::kNone;
  s->ops = &ops;
  Selection sel;
  std::string why;
  if (r == Request::kAuto || r == Request::kMainline) {
    if (detail::select_mainline(ops, s, &why))
      sel.backend = Backend::kMainline;
    else
      sel.rejected.push_back({Backend::kMainline, why});
  } else {
    sel.rejected.push_back({Backend::kMainline, "not requested"});
  }
  if (r == Request::kRfc) {
    if (detail::select_rfc(ops, s, &why))
      sel.backend = Backend::kRfc;
    else
      sel.rejected.push_back({Backend::kRfc, why});
  } else {
    sel.rejected.push_back(
        {Backend::kRfc, r == Request::kAuto
                            ? "not probed: task_getshared was never merged and mainline uses "
                              "syscall 463 for another call; request it explicitly"
                            : "not requested"});
  }
  return sel;
}

inline Backend thread_backend() { return detail::tls_slice.backend; }
inline Counters thread_counters() { return detail::tls_slice.counters; }
inline void reset_thread_counters() { detail::tls_slice.counters = Counters{}; }

inline void* thread_rseq_area(const KernelOps& ops) {
  std::string why;
  return detail::find_rseq_area(ops, &why);
}

inline void TEST_use_word(Backend protocol, void* word, const KernelOps& ops) {
  detail::ThreadSlice* s = &detail::tls_slice;
  s->backend = word == nullptr ? Backend::kNone : protocol;
  s->word = s->backend == Backend::kNone ? nullptr : static_cast<volatile uint8_t*>(word);
  s->ops = &ops;
}

inline void TEST_reset_thread() {
  detail::tls_slice = detail::ThreadSlice{};
  detail::own_rseq.unregister();
}

}  // namespace real
