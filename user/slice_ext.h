// The user side of the time slice extension, one protocol per ABI, the same the real
// library (real/slice_ext.h) follows:
//   rfc       task_getshared() once; sched_delay = REQ before the critical section; after it
//             read the word, write 0, and sched_yield() if it read GRANTED.
//   rseq2023  set bit 3 in rseq->flags; after, test-and-clear it: if the kernel had already
//             cleared it, the extension was granted: sched_yield().
//   mainline  prctl(PR_RSEQ_SLICE_EXTENSION, SET, ENABLE) once; slice_ctrl.request = 1;
//             after, request = 0 and read granted: if set, rseq_slice_yield().
// Each protocol is a table (SliceExtProtocol, user/slice_ext.cc); the client counts requests,
// grants seen, denials seen and yields the same way for all of them.
#pragma once
#include <cstdint>
#include <string>

#include "kernel/config.h"
#include "user/thread.h"

namespace user {

using SliceAbi = kernel::SliceExtAbi;

// What one design asks of a thread: the state its protocol keeps (`shared_addr`: the RFC's
// task_getshared() answer) is the client's.
struct SliceExtProtocol {
  bool configured;  // false only for "none": init() succeeds, requests are no-ops
  // Per-thread set-up: 0 or -errno.
  Task<int64_t> (*init)(Thread& t, int64_t* shared_addr);
  // Before the critical section: one store.
  void (*request)(Thread& t, int64_t shared_addr);
  // After it: withdraws the request; true if granted; *denied if the kernel said DENIED.
  bool (*release)(Thread& t, int64_t shared_addr, bool* denied);
  // Gives the CPU back after a grant.
  Thread::Action (*yield)(Thread& t);
};

const SliceExtProtocol* slice_ext_protocol(SliceAbi abi);

class SliceExtClient {
 public:
  struct Counters {
    uint64_t requests = 0;
    uint64_t grants = 0;   // releases that found the extension granted
    uint64_t denials = 0;  // RFC: releases that found DENIED
    uint64_t yields = 0;
  };

  explicit SliceExtClient(SliceAbi abi) : abi_(abi), proto_(slice_ext_protocol(abi)) {}
  // Per-thread set-up: the syscall of the ABI (task_getshared / prctl). Returns 0 or -errno;
  // on failure the client stays inactive (requests are no-ops), like the real library's
  // "none" backend.
  Task<int64_t> init(Thread& t);
  bool active() const { return active_; }
  SliceAbi abi() const { return abi_; }

  // Before the critical section: one store. (Inline: without an extension, on every
  // critical section, nothing.)
  void request(Thread& t) {
    if (active_) request_active(t);
  }
  // After it: ends the request; true if the extension was granted and the caller must
  // give the CPU back at once: co_await yield(t).
  bool release(Thread& t) { return active_ && requested_ && release_requested(t); }
  Thread::Action yield(Thread& t);
  const Counters& counters() const { return c_; }

 private:
  void request_active(Thread& t);
  bool release_requested(Thread& t);

  SliceAbi abi_;
  const SliceExtProtocol* proto_;
  bool active_ = false;
  bool requested_ = false;
  int64_t shared_addr_ = 0;  // RFC: the address task_getshared() returned
  Counters c_;
};

}  // namespace user
