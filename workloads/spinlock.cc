// spinlock: N threads sharing M test-and-test-and-set spin locks. Each loops: think (user
// work outside the lock), take lock i % M by spinning, hold it for the critical section,
// release. Optional CPU hogs compete for the CPUs. Reports acquisitions per second, the
// time to acquire, lock-holder preemptions and the CPU burnt spinning.
#include <algorithm>

#include "sim/stats.h"
#include "user/slice_ext.h"
#include "user/sync.h"
#include "workloads/common.h"

namespace workloads {

namespace {

struct Shared {
  std::vector<user::SpinLock> locks;
  Dist cs, think;
  kernel::SliceExtAbi ext = kernel::SliceExtAbi::None;
  uint64_t acquisitions = 0;
  uint64_t requests = 0, grants = 0;
  sim::Histogram acquire_ns;
};

// With `ext`, the critical section is wrapped in a slice extension request: asked for
// before taking the lock, released after unlocking, the CPU given back if granted.
user::Program spin_client(user::Thread& t, Shared* s, int lock_index) {
  user::SpinLock& lock = s->locks[lock_index];
  user::SliceExtClient ext(s->ext);
  co_await ext.init(t);
  for (;;) {
    co_await t.compute(s->think.sample(t.rng()));
    const int64_t start = t.now();
    ext.request(t);
    while (!lock.try_lock(t)) co_await lock.wait_unlocked(t);
    s->acquire_ns.add(t.now() - start);
    co_await t.compute(s->cs.sample(t.rng()));
    lock.unlock(t);
    s->acquisitions++;
    s->requests += ext.active();
    if (ext.release(t)) {
      s->grants++;
      co_await ext.yield(t);
    }
  }
}

class SpinLockWorkload : public Workload {
 public:
  std::string setup(kernel::Kernel& k, const Params& p, uint64_t seed) override {
    int threads = p.get_int_in("threads", 0, kMaxThreads);
    const int locks = p.get_int_in("locks", 1, kMaxThreads);
    const int hogs = p.get_int_in("hogs", 0, kMaxThreads);
    const int nice = p.get_int_in("nice", -20, 19);
    const int hog_nice = p.get_int_in("hog_nice", -20, 19);
    if (!p.error().empty()) return p.error();
    if (std::string e = parse_dist("cs", p.get("cs"), &s_.cs); !e.empty()) return e;
    if (std::string e = parse_dist("think", p.get("think"), &s_.think); !e.empty()) return e;
    int policy = SCHED_NORMAL;
    if (std::string e = parse_policy("policy", p.get("policy"), &policy); !e.empty()) return e;
    if (std::string e = kernel::parse_slice_ext_abi(p.get("ext"), &s_.ext); !e.empty()) return "ext: " + e;
    if (s_.cs.always_zero() && s_.think.always_zero())
      return "cs, think: both always 0, so a client's loop would take no time";
    if (threads < 0) return "threads: must be >= 0 (0 = one per CPU)";
    if (threads == 0) threads = k.nr_cpus();
    if (locks < 1) return "locks: must be >= 1";
    if (locks > threads) return "locks: more locks than threads (" + std::to_string(locks) + " > " +
                                std::to_string(threads) + ")";
    if (hogs < 0) return "hogs: must be >= 0";
    s_.locks = std::vector<user::SpinLock>(static_cast<size_t>(locks));
    kernel::TaskAttr attr;
    if (std::string e = thread_attr(k, "client", policy, nice, &attr); !e.empty()) return e;
    bool hogs_before = true;
    if (std::string e = parse_hogs_start(p, &hogs_before); !e.empty()) return e;
    if (hogs_before)
      if (std::string e = spawn_hogs(k, hogs, hog_nice, SCHED_NORMAL, seed); !e.empty()) return e;
    tgid_ = k.create_process("spinlock");
    for (int i = 0; i < threads; ++i) {
      auto th = std::make_unique<user::Thread>(&k, sim::Rng(seed, i));
      th->start(spin_client(*th, &s_, i % locks));
      k.create_thread(tgid_, attr, std::move(th));
    }
    return hogs_before ? "" : spawn_hogs(k, hogs, hog_nice, SCHED_NORMAL, seed);
  }

  void report(const kernel::KernelStats& ks, sim::Time duration, report::Results* r) override {
    const double secs = static_cast<double>(duration) / 1e9;
    uint64_t lhp = 0;
    int64_t spin = 0, run = 0;
    for (const kernel::TaskStats& t : ks.tasks) {
      if (t.tgid != tgid_) continue;
      lhp += t.lock_holder_preemptions;
      spin += static_cast<int64_t>(t.spin_ns);
      run += static_cast<int64_t>(t.run_ns);
    }
    r->metrics.push_back({"acquisitions_per_second", static_cast<double>(s_.acquisitions) / secs,
                          "1/s", "lock acquisitions completed (critical sections done)"});
    r->metrics.push_back({"lock_holder_preemptions", static_cast<double>(lhp), "",
                          "times a thread was preempted while holding a lock"});
    r->metrics.push_back({"spin_cpu_share", run ? static_cast<double>(spin) / static_cast<double>(run) : 0,
                          "of client CPU", "share of the clients' CPU time burnt spinning"});
    r->metrics.push_back({"spin_cpu_seconds_per_second", static_cast<double>(spin) / 1e9 / secs,
                          "CPUs", "CPU time burnt spinning per second of run"});
    if (user::slice_ext_protocol(s_.ext)->configured) {
      r->metrics.push_back({"slice_ext_requests", static_cast<double>(s_.requests), "",
                            "critical sections run with an extension request"});
      r->metrics.push_back({"slice_ext_grants_seen", static_cast<double>(s_.grants), "",
                            "releases that found the extension granted (and yielded)"});
    }
    const report::LatencySummary l = latency_summary("acquire", s_.acquire_ns);
    r->latencies.push_back(l);
  }

 private:
  Shared s_;
  int tgid_ = 0;
};

}  // namespace

WorkloadInfo spinlock_workload() {
  return {"spinlock",
          "N threads sharing M TTAS spin locks, with think time, optional CPU hogs",
          {{"threads", "0", "client threads (0 = one per CPU)"},
           {"locks", "1", "number of locks; thread i uses lock i % locks"},
           {"cs", "uniform:5us:15us", "critical section length (duration or distribution)"},
           {"think", "exp:500us", "user work between critical sections"},
           {"hogs", "0", "CPU hog threads competing for the CPUs"},
           hogs_start_param(),
           nice_param("nice", "the clients"),
           nice_param("hog_nice", "the hogs"),
           policy_param("normal", "the clients'"),
           ext_param("around each critical section")},
          [] { return std::make_unique<SpinLockWorkload>(); }};
}

}  // namespace workloads
