// hog: N pure CPU-bound threads (like `stress -c N`). Reports the CPU they got and how
// evenly it was shared, the first thing to check of a fair scheduler.
#include <algorithm>

#include "workloads/common.h"

namespace workloads {

namespace {

class Hog : public Workload {
 public:
  std::string setup(kernel::Kernel& k, const Params& p, uint64_t seed) override {
    int threads = p.get_int_in("threads", 0, kMaxThreads);
    const int nice = p.get_int_in("nice", -20, 19);
    int policy = SCHED_NORMAL;
    if (!p.error().empty()) return p.error();
    if (std::string e = parse_policy("policy", p.get("policy"), &policy); !e.empty()) return e;
    if (threads < 0) return "threads: must be >= 0 (0 = one per CPU)";
    if (threads == 0) threads = k.nr_cpus();
    kernel::TaskAttr attr;
    attr.policy = policy;
    attr.nice = nice;
    attr.rt_priority = rt_priority_for(policy);
    if (std::string e = k.validate_attr(attr); !e.empty()) return e;
    tgid_ = k.create_process("hog");
    for (int i = 0; i < threads; ++i) {
      attr.comm = "hog";
      auto th = std::make_unique<user::Thread>(&k, sim::Rng(seed, i));
      th->start(hog_program(*th));
      k.create_thread(tgid_, attr, std::move(th));
    }
    threads_ = threads;
    return "";
  }

  void report(const kernel::KernelStats& ks, sim::Time duration, report::Results* r) override {
    int64_t total = 0, lo = INT64_MAX, hi = 0;
    for (const kernel::TaskStats& t : ks.tasks) {
      if (t.tgid != tgid_) continue;
      const int64_t run = static_cast<int64_t>(t.run_ns);
      total += run;
      lo = std::min(lo, run);
      hi = std::max(hi, run);
    }
    const double secs = static_cast<double>(duration) / 1e9;
    r->metrics.push_back({"hog_cpu_seconds_per_second", static_cast<double>(total) / 1e9 / secs,
                          "CPUs", "CPU time the hogs received per second of run"});
    if (threads_ > 0 && total > 0) {
      const double fair = static_cast<double>(total) / threads_;
      r->metrics.push_back({"hog_share_min", static_cast<double>(lo) / fair, "x fair",
                            "least CPU one hog got, relative to an equal share"});
      r->metrics.push_back({"hog_share_max", static_cast<double>(hi) / fair, "x fair",
                            "most CPU one hog got, relative to an equal share"});
    }
  }

 private:
  int tgid_ = 0;
  int threads_ = 0;
};

}  // namespace

WorkloadInfo hog_workload() {
  return {"hog",
          "N CPU-bound threads; reports the CPU they got and how evenly",
          {{"threads", "0", "number of hog threads (0 = one per CPU)"},
           nice_param("nice", "the hogs"),
           policy_param("normal", "the hogs'")},
          [] { return std::make_unique<Hog>(); }};
}

}  // namespace workloads
