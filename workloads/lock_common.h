// Pieces the lock workloads (extend-sched2, locktable, oltp) share.
#pragma once
#include <string>
#include <vector>

#include "user/slice_ext.h"
#include "user/sync.h"
#include "workloads/common.h"

namespace workloads {

// The extension ABI the clients use: parameter `ext` (none, rfc, rseq2023, mainline), or, if
// `with_mode` and parameter `mode` is not empty, `mode` 0..3 (extend-sched2's numbering),
// which wins over `ext`.
std::string parse_slice_abi(const Params& p, bool with_mode, user::SliceAbi* abi);
// `hogs`: a count, -1 = one per CPU; `auto_count` is what "auto" means (-1: not accepted).
std::string parse_hogs(const Params& p, int nr_cpus, int auto_count, int* hogs);
// Takes `lock` asking for an extension first; the request is withdrawn while spinning.
user::Task<> lock_extended(user::Thread& t, user::SpinLock* lock, user::SliceExtClient* ext);
// A client thread's extension state: its protocol client and what its init() returned.
struct LockClient {
  explicit LockClient(user::SliceAbi abi) : ext(abi) {}
  user::SliceExtClient ext;
  int64_t init_ret = 0;
};

// Where a lock's critical sections run: the CPU of the last one, and how many began on the
// CPU of the one before. `schedlab real` counts the same (real/runner_internal.h), so the
// two can be compared: 1 when a lock's threads share a CPU, near 0 when each has its own.
struct CsCpuTrail {
  int last_cpu = -1;
  uint64_t handoffs = 0, same_cpu = 0;
  // A critical section begins on `cpu` (the lock is held).
  void record(int cpu) {
    if (last_cpu >= 0) {
      handoffs++;
      same_cpu += cpu == last_cpu;
    }
    last_cpu = cpu;
  }
};
// Adds the metric same_cpu_handoff_share over the trails of a workload's locks.
void report_same_cpu_handoffs(const std::vector<CsCpuTrail>& trails, report::Results* r);

// Lock-holder preemptions, spinning, the hogs' CPU and the extension's counters of `tgid`.
void report_lock_metrics(const kernel::KernelStats& ks, int tgid, sim::Time duration, user::SliceAbi abi,
                         const std::vector<const user::SliceExtClient*>& clients,
                         const std::vector<int64_t>& init_ret, report::Results* r,
                         sim::Time hog_duration = 0);

// The same, for a workload's clients (any objects with `ext` and `init_ret`, by pointer).
template <class Clients>
// `hog_duration` (0 = `duration`): the time the hogs' rate is over, when the hogs started
// before the clients (locktable's hogs_lead).
void report_client_lock_metrics(const kernel::KernelStats& ks, int tgid, sim::Time duration,
                                user::SliceAbi abi, const Clients& clients, report::Results* r,
                                sim::Time hog_duration = 0) {
  std::vector<const user::SliceExtClient*> ext;
  std::vector<int64_t> init_ret;
  for (const auto& c : clients) {
    ext.push_back(&c->ext);
    init_ret.push_back(c->init_ret);
  }
  report_lock_metrics(ks, tgid, duration, abi, ext, init_ret, r, hog_duration);
}

}  // namespace workloads
