// wakeup-latency and cyclictest: a thread sleeps until an absolute period boundary
// (clock_nanosleep TIMER_ABSTIME, as cyclictest -n) and records how late it runs; optional
// CPU hogs load the machine. Reports the latency distribution (p50 / p99 / max).
// `cyclictest` is the same program with rt-tests' cyclictest's usual measurement setup as
// defaults: `cyclictest -S -p 99 -i 100 -d 0` (one SCHED_FIFO 99 thread per CPU, each pinned
// to its own, 100 us interval, no load), and, as cyclictest does unless --laptop, a CPU
// latency request of 0 (set_latency_target() writes 0 to /dev/cpu_dma_latency), under which
// idle CPUs poll.
#include <climits>

#include "sim/stats.h"
#include "workloads/common.h"

namespace workloads {

namespace {

struct Shared {
  int64_t interval = 0;
  sim::Histogram latency;
};

user::Program cyclic(user::Thread& t, Shared* s) {
  int64_t next = t.now() + s->interval;
  for (;;) {
    co_await t.sleep_until(next);
    s->latency.add(t.now() - next);
    next += s->interval;
    while (next <= t.now()) next += s->interval;  // overrun: skip missed periods
  }
}

class WakeupLatency : public Workload {
 public:
  std::string setup(kernel::Kernel& k, const Params& p, uint64_t seed) override {
    s_.interval = p.get_ns("interval");
    const int prio = p.get_int_in("priority", 1, 99);
    const int cpu = p.get_int_in("cpu", -1, k.nr_cpus() - 1);
    int hogs = p.get_int_in("hogs", -1, kMaxThreads);
    int threads = p.get_int_in("threads", -1, kMaxThreads);
    const int latency = p.get_int_in("latency", -1, INT32_MAX);
    if (!p.error().empty()) return p.error();
    if (s_.interval <= 0) return "interval: must be > 0 (got '" + p.get("interval") + "')";
    if (threads == 0) return "threads: must be >= 1 or -1 (got '0')";
    // threads=-1: one thread per CPU, thread i pinned to CPU i (cyclictest -S: -t -a).
    const bool per_cpu = threads < 0;
    if (per_cpu && cpu >= 0)
      return "cpu: must be -1 with threads=-1, which pins one thread to each CPU (got '" +
             p.get("cpu") + "')";
    if (per_cpu) threads = k.nr_cpus();
    int policy = SCHED_FIFO;
    if (std::string e = parse_policy("policy", p.get("policy"), &policy); !e.empty()) return e;
    if (hogs < 0) hogs = k.nr_cpus();
    kernel::TaskAttr attr;
    attr.comm = "cyclictest";
    attr.policy = policy;
    attr.rt_priority = (policy == SCHED_FIFO || policy == SCHED_RR) ? prio : 0;
    if (cpu >= 0) attr.cpus = {cpu};
    if (std::string e = k.validate_attr(attr); !e.empty()) return e;
    bool hogs_before = true;
    if (std::string e = parse_hogs_start(p, &hogs_before); !e.empty()) return e;
    if (hogs_before)
      if (std::string e = spawn_hogs(k, hogs, 0, SCHED_NORMAL, seed); !e.empty()) return e;
    if (latency >= 0) k.cpu_latency_qos_add_request(latency);  // open("/dev/cpu_dma_latency")
    const int tgid = k.create_process("cyclictest");
    for (int i = 0; i < threads; ++i) {
      if (per_cpu) attr.cpus = {i};
      auto th = std::make_unique<user::Thread>(&k, sim::Rng(seed, i));
      th->start(cyclic(*th, &s_));
      k.create_thread(tgid, attr, std::move(th));
    }
    return hogs_before ? "" : spawn_hogs(k, hogs, 0, SCHED_NORMAL, seed);
  }

  void report(const kernel::KernelStats&, sim::Time, report::Results* r) override {
    const report::LatencySummary l = latency_summary("wakeup", s_.latency);
    r->latencies.push_back(l);
    r->metrics.push_back({"wakeup_p50_us", static_cast<double>(l.p50_ns) / 1e3, "us", "median wakeup latency"});
    r->metrics.push_back({"wakeup_p99_us", static_cast<double>(l.p99_ns) / 1e3, "us", "99th percentile wakeup latency"});
    r->metrics.push_back({"wakeup_max_us", static_cast<double>(l.max_ns) / 1e3, "us", "worst wakeup latency"});
  }

 private:
  Shared s_;
};

}  // namespace

WorkloadInfo wakeup_latency_workload() {
  return {"wakeup-latency",
          "cyclictest-like periodic thread (FIFO or fair) with optional CPU hogs",
          {{"interval", "1ms", "period of the timer"},
           policy_param("fifo", "the measuring thread's"),
           {"priority", "99", "RT priority (fifo/rr)"},
           {"threads", "1", "measuring threads (-1 = one per CPU, each pinned to its own)"},
           {"cpu", "-1", "pin the measuring thread to this CPU (-1 = no pinning)"},
           {"hogs", "-1", "CPU hog threads (-1 = one per CPU)"},
           {"latency", "-1",
            "CPU latency request in us written to /dev/cpu_dma_latency (-1 = none)"},
           hogs_start_param()},
          [] { return std::make_unique<WakeupLatency>(); }};
}

WorkloadInfo cyclictest_workload() {
  return {"cyclictest",
          "cyclictest -S -p 99 -i 100: one FIFO 99 thread per CPU, 100 us period; wakeup latency",
          {{"interval", "100us", "period of the timer (cyclictest -i)"},
           policy_param("fifo", "the measuring threads'"),
           {"priority", "99", "RT priority (cyclictest -p)"},
           {"threads", "-1", "measuring threads (-1 = one per CPU, each pinned to its own: -S)"},
           {"cpu", "-1", "pin every measuring thread to this CPU (-1 = no; needs threads >= 1)"},
           {"hogs", "0", "CPU hog threads (-1 = one per CPU)"},
           {"latency", "0",
            "CPU latency request in us written to /dev/cpu_dma_latency (cyclictest --latency; "
            "-1 = none, --laptop)"},
           hogs_start_param()},
          [] { return std::make_unique<WakeupLatency>(); }};
}

}  // namespace workloads
