// locktable: the database lock-table test the time slice extension RFC was written for
// (RFC thread, November 2024): many clients each run a query outside the lock, then take the table's
// spin lock for a short critical section, asking for a slice extension while they hold it;
// CPU hogs oversubscribe the machine so holders get preempted. Defaults: the RFC thread's 300
// clients, beside 400 hogs on the 384-CPU genoa, scaled to the machine. Reports SQL
// executions per second, lock-holder preemptions, spinning, the time to acquire, and the
// extension's requests, grants and denials as the clients and the kernel count them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sim/stats.h"
#include "user/slice_ext.h"
#include "user/sync.h"
#include "workloads/common.h"
#include "workloads/lock_common.h"

namespace workloads {

// ---- locktable ----

namespace {

constexpr int kGenoaCpus = 384;
constexpr int kRfcClients = 300;
constexpr int kRfcHogs = 400;

// n scaled from the 384-CPU Genoa to this machine, at least 1.
int scaled(int n, int cpus) {
  return std::max(1, static_cast<int>(std::lround(static_cast<double>(n) * cpus / kGenoaCpus)));
}

using Client = LockClient;

constexpr uint64_t kHogsLeadStream = 0x6c656164;  // "lead"

struct Shared {
  std::vector<user::SpinLock> locks;
  std::vector<CsCpuTrail> trails;  // per lock
  Dist query, cs;
  uint64_t executions = 0;
  sim::Histogram acquire_ns, hold_ns;
};

user::Program locktable_client(user::Thread& t, Shared* s, Client* c, int lock_index) {
  c->init_ret = co_await c->ext.init(t);
  user::SpinLock* lock = &s->locks[lock_index];
  for (;;) {
    co_await t.compute(s->query.sample(t.rng()));  // the query, outside the lock
    const int64_t start = t.now();
    co_await lock_extended(t, lock, &c->ext);
    const int64_t taken = t.now();
    s->acquire_ns.add(taken - start);
    s->trails[static_cast<size_t>(lock_index)].record(t.cpu());
    co_await t.compute(s->cs.sample(t.rng()));
    lock->unlock(t);
    s->hold_ns.add(t.now() - taken);
    if (c->ext.release(t)) co_await c->ext.yield(t);
    s->executions++;
  }
}

class LockTable : public Workload {
 public:
  std::string setup(kernel::Kernel& k, const Params& p, uint64_t seed) override {
    int clients = p.get_int_in("clients", 0, kMaxThreads);
    const int locks = p.get_int_in("locks", 1, kMaxThreads);
    const int nice = p.get_int_in("nice", -20, 19);
    const int hog_nice = p.get_int_in("hog_nice", -20, 19);
    if (!p.error().empty()) return p.error();
    if (std::string e = parse_dist("query", p.get("query"), &s_.query); !e.empty()) return e;
    if (std::string e = parse_dist("cs", p.get("cs"), &s_.cs); !e.empty()) return e;
    Dist lead;
    if (std::string e = parse_dist("hogs_lead", p.get("hogs_lead"), &lead); !e.empty()) return e;
    if (std::string e = parse_slice_abi(p, false, &abi_); !e.empty()) return e;
    int policy = SCHED_NORMAL, hog_policy = SCHED_NORMAL;
    if (std::string e = parse_policy("policy", p.get("policy"), &policy); !e.empty()) return e;
    if (std::string e = parse_policy("hog_policy", p.get("hog_policy"), &hog_policy); !e.empty())
      return e;
    int hogs = 0;
    if (std::string e = parse_hogs(p, k.nr_cpus(), scaled(kRfcHogs, k.nr_cpus()), &hogs); !e.empty())
      return e;
    if (s_.query.always_zero() && s_.cs.always_zero())
      return "query, cs: both always 0, so a client's loop would take no time";
    if (clients < 0) return "clients: must be >= 0 (0 = 300 scaled to the machine)";
    if (clients == 0) clients = scaled(kRfcClients, k.nr_cpus());
    if (locks < 1) return "locks: must be >= 1";
    if (locks > clients)
      return "locks: more locks than clients (" + std::to_string(locks) + " > " +
             std::to_string(clients) + ")";
    s_.locks = std::vector<user::SpinLock>(static_cast<size_t>(locks));
    s_.trails.assign(static_cast<size_t>(locks), CsCpuTrail{});
    kernel::TaskAttr attr;
    if (std::string e = thread_attr(k, "client", policy, nice, &attr); !e.empty()) return e;
    bool hogs_before = true;
    if (std::string e = parse_hogs_start(p, &hogs_before); !e.empty()) return e;
    HogsAs hogs_as = HogsAs::kThreads;
    if (std::string e = parse_hogs_as(p, &hogs_as); !e.empty()) return e;
    if (!hogs_before && !lead.always_zero())
      return "hogs_lead: needs hogs_start=before (got hogs_start=after)";
    // The hog program started this long before the clients (from another shell): drawn once
    // per seed, from a stream of its own.
    sim::Rng lead_rng(seed, kHogsLeadStream);
    lead_ns_ = lead.sample(lead_rng);
    if (hogs_before)
      if (std::string e = spawn_hogs(k, hogs, hog_nice, hog_policy, seed, hogs_as); !e.empty()) return e;
    tgid_ = k.create_process("locktable");
    for (int i = 0; i < clients; ++i) {
      clients_.push_back(std::make_unique<Client>(abi_));
      auto th = std::make_unique<user::Thread>(&k, sim::Rng(seed, i));
      th->start(locktable_client(*th, &s_, clients_.back().get(), i % locks));
      k.create_thread(tgid_, attr, std::move(th), lead_ns_);
    }
    char line[200];
    std::snprintf(line, sizeof(line), "locktable: %d clients on %d lock(s), %d hog(s), ext=%s",
                  clients, locks, hogs, kernel::slice_ext_abi_name(abi_));
    if (lead_ns_ > 0)
      std::snprintf(line + std::strlen(line), sizeof(line) - std::strlen(line),
                    ", clients started %.3f ms after the hogs", static_cast<double>(lead_ns_) / 1e6);
    summary_ = line;
    return hogs_before ? "" : spawn_hogs(k, hogs, hog_nice, hog_policy, seed, hogs_as);
  }

  void report(const kernel::KernelStats& ks, sim::Time run, report::Results* r) override {
    // The clients' rates are over the time they existed: the run after hogs_lead.
    const sim::Time duration = std::max<sim::Time>(1, run - lead_ns_);
    const double secs = static_cast<double>(duration) / 1e9;
    r->notices.push_back(summary_);
    r->metrics.push_back({"sql_executions_per_second", static_cast<double>(s_.executions) / secs,
                          "1/s", "client loops completed (query + critical section)"});
    report_same_cpu_handoffs(s_.trails, r);
    report_client_lock_metrics(ks, tgid_, duration, abi_, clients_, r, run);
    r->latencies.push_back(latency_summary("acquire", s_.acquire_ns));
    r->latencies.push_back(latency_summary("hold", s_.hold_ns));
  }

 private:
  Shared s_;
  user::SliceAbi abi_ = user::SliceAbi::None;
  std::vector<std::unique_ptr<Client>> clients_;
  std::string summary_;
  int tgid_ = 0;
  int64_t lead_ns_ = 0;
};

}  // namespace

WorkloadInfo locktable_workload() {
  return {"locktable",
          "database lock table (RFC test): clients query, then take a table spin lock "
          "asking for a slice extension, beside CPU hogs",
          {{"clients", "0", "client threads (0 = 300 scaled to the machine: 300 on the 384-CPU genoa)"},
           {"hogs", "auto", "CPU hogs (auto = 400 scaled to the machine; -1 = one per CPU; 0 = none)"},
           hogs_start_param(),
           hogs_as_param(),
           {"hogs_lead", "0", "time the hogs run before the clients are forked (a duration or distribution, drawn once per seed); the clients' rates are over the rest of the run"},
           {"locks", "1", "table spin locks; client i uses lock i % locks"},
           {"query", "exp:1ms", "work of one SQL execution outside the lock"},
           {"cs", "uniform:2us:8us", "critical section under the table lock"},
           ext_param("the clients use"),
           nice_param("nice", "the clients"),
           nice_param("hog_nice", "the hogs"),
           policy_param("normal", "the clients'"),
           {"hog_policy", "normal", "hogs' policy: normal, batch, idle, fifo, rr"}},
          [] { return std::make_unique<LockTable>(); }};
}

}  // namespace workloads
