// Pieces the lock workloads (extend-sched2, locktable, oltp) share: the `ext` / `mode` and
// `hogs` parameters, taking a lock with an extension request, and the lock and extension
// metrics.
#include "workloads/lock_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace workloads {

// The extension ABI the clients use: parameter `ext` (none, rfc, rseq2023, mainline), or,
// if `with_mode` and parameter `mode` is not empty, `mode` 0..3 (extend-sched2's numbering:
// 0 none, 1 RFC shared page, 2 rseq 2023 prototype, 3 mainline), which wins over `ext`.
std::string parse_slice_abi(const Params& p, bool with_mode, user::SliceAbi* abi) {
  if (with_mode && !p.get("mode").empty()) {
    const std::string m = p.get("mode");
    if (m.size() != 1 || m[0] < '0' || m[0] > '3')
      return "mode: expected 0 (none), 1 (rfc), 2 (rseq2023) or 3 (mainline) (got '" + m + "')";
    static constexpr user::SliceAbi kModes[] = {user::SliceAbi::None, user::SliceAbi::Rfc,
                                                user::SliceAbi::Rseq2023, user::SliceAbi::Mainline};
    *abi = kModes[m[0] - '0'];
    return "";
  }
  // The kernel's error, named for the parameter: "ext: unknown variant 'x' (choose ...)".
  if (std::string e = kernel::parse_slice_ext_abi(p.get("ext"), abi); !e.empty())
    return "ext" + e.substr(e.find(':'));
  return "";
}

// `hogs`: a count, -1 = one per CPU; `auto_count` is what "auto" means (-1: not accepted).
std::string parse_hogs(const Params& p, int nr_cpus, int auto_count, int* hogs) {
  const std::string v = p.get("hogs");
  if (v == "auto" && auto_count >= 0) {
    *hogs = auto_count;
    return "";
  }
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < -1 || n > kMaxThreads)
    return std::string("hogs: expected a number of hogs, -1 = one per CPU") +
           (auto_count >= 0 ? ", or auto" : "") + " (got '" + v + "')";
  *hogs = n == -1 ? nr_cpus : static_cast<int>(n);
  return "";
}

namespace {
// The tgid of the "hog" process spawn_hogs() made, or 0.
int hog_tgid(const kernel::KernelStats& ks) {
  for (const kernel::TaskStats& t : ks.tasks)
    if (t.process == "hog") return t.tgid;
  return 0;
}
}  // namespace


// Lock-holder preemptions and spinning of process `tgid`, the CPU the hogs got, and the
// extension's counters: the clients' own (what user space saw) and the kernel's per-task
// statistics, both per client; plus notices when the kernel and the clients disagree.
void report_lock_metrics(const kernel::KernelStats& ks, int tgid, sim::Time duration, user::SliceAbi abi,
                         const std::vector<const user::SliceExtClient*>& clients,
                         const std::vector<int64_t>& init_ret, report::Results* r,
                         sim::Time hog_duration) {
  const double secs = static_cast<double>(duration) / 1e9;
  const double hog_secs = static_cast<double>(hog_duration > 0 ? hog_duration : duration) / 1e9;
  uint64_t lhp = 0;
  int64_t lhp_ns = 0, spin = 0, run = 0;
  kernel::SliceExtCounts kc;
  for (const kernel::TaskStats& t : ks.tasks) {
    if (t.tgid != tgid) continue;
    lhp += t.lock_holder_preemptions;
    lhp_ns += static_cast<int64_t>(t.lock_held_preempted_ns);
    spin += static_cast<int64_t>(t.spin_ns);
    run += static_cast<int64_t>(t.run_ns);
    kc.granted += t.slice_ext.granted;
    kc.denied += t.slice_ext.denied;
    kc.expired += t.slice_ext.expired;
    kc.revoked += t.slice_ext.revoked;
    kc.yielded += t.slice_ext.yielded;
    kc.aborted += t.slice_ext.aborted;
  }
  const int hogs = hog_tgid(ks);
  const int64_t hog_ns = hogs ? process_run_ns(ks, hogs) : 0;
  auto add = [r](const char* name, double v, const char* unit, const char* help) {
    r->metrics.push_back({name, v, unit, help});
  };
  add("lock_holder_preemptions", static_cast<double>(lhp), "",
      "times a client was preempted while holding a lock");
  add("lock_holder_preempted_ms", static_cast<double>(lhp_ns) / 1e6, "ms",
      "time lock holders spent off-CPU after such preemptions (sum)");
  add("spin_cpu_share", run ? static_cast<double>(spin) / static_cast<double>(run) : 0,
      "of client CPU", "share of the clients' CPU time burnt spinning");
  add("spin_cpu_seconds_per_second", static_cast<double>(spin) / 1e9 / secs, "CPUs",
      "CPU time burnt spinning per second of run");
  add("hog_cpu_seconds_per_second", static_cast<double>(hog_ns) / 1e9 / hog_secs, "CPUs",
      "CPU time the hogs received per second of run");

  user::SliceExtClient::Counters uc;
  for (const user::SliceExtClient* c : clients) {
    uc.requests += c->counters().requests;
    uc.grants += c->counters().grants;
    uc.denials += c->counters().denials;
    uc.yields += c->counters().yields;
  }
  const double n = clients.empty() ? 1.0 : static_cast<double>(clients.size());
  auto per = [n](uint64_t v) { return static_cast<double>(v) / n; };
  add("ext_requests_per_client", per(uc.requests), "", "extension requests made (user side)");
  add("ext_grants_per_client", per(uc.grants), "", "releases that found the extension granted");
  add("ext_denials_per_client", per(uc.denials), "", "releases that found DENIED (RFC only)");
  add("ext_yields_per_client", per(uc.yields), "", "CPU given back after a grant");
  add("ext_grant_ratio", uc.requests ? static_cast<double>(uc.grants) / static_cast<double>(uc.requests) : 0,
      "of requests", "share of requests the clients saw granted");
  add("kernel_granted_per_client", per(kc.granted), "", "kernel: grants (nr_granted)");
  add("kernel_denied_per_client", per(kc.denied), "", "kernel: denials (nr_denied)");
  add("kernel_expired_per_client", per(kc.expired), "", "kernel: grants ended by the timer");
  add("kernel_revoked_per_client", per(kc.revoked), "", "kernel: grants revoked (7.0)");
  add("kernel_yielded_per_client", per(kc.yielded), "", "kernel: grants ended by a yield (7.0)");
  add("kernel_aborted_per_client", per(kc.aborted), "", "kernel: grants aborted by a syscall (7.0)");

  const user::SliceAbi kabi = ks.slice_ext_abi;
  if (abi != kabi) {
    r->notices.push_back(
        std::string("the clients use ext=") + kernel::slice_ext_abi_name(abi) +
        " but the kernel carries slice_ext=" + kernel::slice_ext_abi_name(kabi) +
        (!user::slice_ext_protocol(abi)->configured ? ": nothing is requested"
                                     : ": requests are never granted (set slice_ext too)"));
  }
  size_t failed = 0;
  int64_t first_err = 0;
  for (size_t i = 0; i < clients.size() && i < init_ret.size(); ++i)
    if (user::slice_ext_protocol(abi)->configured && !clients[i]->active()) {
      if (!failed++) first_err = init_ret[i];
    }
  if (failed)
    r->notices.push_back(std::to_string(failed) + " client(s) could not enable the extension (first "
                         "error " + std::to_string(first_err) + "): their requests are no-ops");
}

// Takes `lock` asking for an extension first, so a preemption right after the exchange is
// covered; a lost attempt withdraws the request (yielding if it had been granted) and spins
// without one, as real/'s SliceSpinLock::lock() does (which, unlike the client here, counts a
// withdrawn request only if the kernel answered it). The caller releases the request after
// unlocking.
user::Task<> lock_extended(user::Thread& t, user::SpinLock* lock, user::SliceExtClient* ext) {
  for (;;) {
    ext->request(t);
    if (lock->try_lock(t)) co_return;
    if (ext->release(t)) co_await ext->yield(t);
    co_await lock->wait_unlocked(t);
  }
}

void report_same_cpu_handoffs(const std::vector<CsCpuTrail>& trails, report::Results* r) {
  uint64_t handoffs = 0, same = 0;
  for (const CsCpuTrail& t : trails) {
    handoffs += t.handoffs;
    same += t.same_cpu;
  }
  r->metrics.push_back({"same_cpu_handoff_share",
                        handoffs ? static_cast<double>(same) / static_cast<double>(handoffs) : 0, "",
                        "critical sections that began on the CPU of the lock's previous one"});
}

}  // namespace workloads
