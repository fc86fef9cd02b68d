// oltp: a Swingbench-like transaction mix, the other workload the slice extension was measured
// with (Swingbench, beside the lock-table test; docs/workloads.md). Many sessions each wait
// for their client's next call (a read that returns after the think time), then run a
// transaction of a few steps; a step computes, takes one of a set of latches (spin locks,
// asking for a slice extension while holding it) for a short critical section, and sometimes
// waits for a disk read. Both waits end at an interrupt, not a timer: no timer slack. Reports
// transactions per second, the transaction latency and the lock and extension metrics of
// locktable.
#include <algorithm>
#include <cstdio>

#include "sim/stats.h"
#include "user/slice_ext.h"
#include "user/sync.h"
#include "workloads/common.h"
#include "workloads/lock_common.h"

namespace workloads {


namespace {

using Client = LockClient;

struct Shared {
  std::vector<user::SpinLock> latches;
  sim::UniformInt latch_draw;  // which latch a step takes: Rng::uniform_int(0, latches - 1)
  Dist think, work, cs, io;
  int steps = 0;
  double io_prob = 0;
  uint64_t transactions = 0;
  sim::Histogram acquire_ns, transaction_ns;
};

user::Program oltp_client(user::Thread& t, Shared* s, Client* c) {
  c->init_ret = co_await c->ext.init(t);
  for (;;) {
    co_await t.read_after(s->think.sample(t.rng()));  // the client's next call
    const int64_t begin = t.now();
    for (int step = 0; step < s->steps; ++step) {
      co_await t.compute(s->work.sample(t.rng()));
      user::SpinLock* latch = &s->latches[static_cast<size_t>(s->latch_draw(t.rng()))];
      const int64_t start = t.now();
      co_await lock_extended(t, latch, &c->ext);
      s->acquire_ns.add(t.now() - start);
      co_await t.compute(s->cs.sample(t.rng()));
      latch->unlock(t);
      if (c->ext.release(t)) co_await c->ext.yield(t);
      if (t.rng().uniform01() < s->io_prob) co_await t.read_after(s->io.sample(t.rng()));
    }
    s->transaction_ns.add(t.now() - begin);
    s->transactions++;
  }
}

class Oltp : public Workload {
 public:
  std::string setup(kernel::Kernel& k, const Params& p, uint64_t seed) override {
    const int clients = p.get_int_in("clients", 1, kMaxThreads);
    const int latches = p.get_int_in("latches", 1, kMaxThreads);
    const int steps = p.get_int_in("steps", 1, 1000000);
    const double io_prob = p.get_double("io_prob");
    const int nice = p.get_int_in("nice", -20, 19);
    if (!p.error().empty()) return p.error();
    for (auto [name, dist] : {std::pair{"think", &s_.think}, std::pair{"work", &s_.work},
                              std::pair{"cs", &s_.cs}, std::pair{"io", &s_.io}})
      if (std::string e = parse_dist(name, p.get(name), dist); !e.empty()) return e;
    if (std::string e = parse_slice_abi(p, false, &abi_); !e.empty()) return e;
    int policy = SCHED_NORMAL;
    if (std::string e = parse_policy("policy", p.get("policy"), &policy); !e.empty()) return e;
    int hogs = 0;
    if (std::string e = parse_hogs(p, k.nr_cpus(), -1, &hogs); !e.empty()) return e;
    if (clients < 1) return "clients: must be >= 1";
    if (latches < 1) return "latches: must be >= 1";
    if (steps < 1) return "steps: must be >= 1";
    if (!(io_prob >= 0 && io_prob <= 1)) return "io_prob: must be between 0 and 1";
    s_.latches = std::vector<user::SpinLock>(static_cast<size_t>(latches));
    s_.latch_draw = sim::UniformInt(0, latches - 1);
    s_.steps = steps;
    s_.io_prob = io_prob;
    kernel::TaskAttr attr;
    if (std::string e = thread_attr(k, "oltp", policy, nice, &attr); !e.empty()) return e;
    bool hogs_before = true;
    if (std::string e = parse_hogs_start(p, &hogs_before); !e.empty()) return e;
    if (hogs_before)
      if (std::string e = spawn_hogs(k, hogs, 0, SCHED_NORMAL, seed); !e.empty()) return e;
    tgid_ = k.create_process("oltp");
    for (int i = 0; i < clients; ++i) {
      clients_.push_back(std::make_unique<Client>(abi_));
      auto th = std::make_unique<user::Thread>(&k, sim::Rng(seed, i));
      th->start(oltp_client(*th, &s_, clients_.back().get()));
      k.create_thread(tgid_, attr, std::move(th));
    }
    char line[160];
    std::snprintf(line, sizeof(line), "oltp: %d clients, %d latches, %d steps, %d hog(s), ext=%s",
                  clients, latches, steps, hogs, kernel::slice_ext_abi_name(abi_));
    summary_ = line;
    return hogs_before ? "" : spawn_hogs(k, hogs, 0, SCHED_NORMAL, seed);
  }

  void report(const kernel::KernelStats& ks, sim::Time duration, report::Results* r) override {
    const double secs = static_cast<double>(duration) / 1e9;
    r->notices.push_back(summary_);
    r->metrics.push_back({"transactions_per_second", static_cast<double>(s_.transactions) / secs,
                          "1/s", "transactions completed (all steps done)"});
    report_client_lock_metrics(ks, tgid_, duration, abi_, clients_, r);
    r->latencies.push_back(latency_summary("transaction", s_.transaction_ns));
    r->latencies.push_back(latency_summary("acquire", s_.acquire_ns));
  }

 private:
  Shared s_;
  user::SliceAbi abi_ = user::SliceAbi::None;
  std::vector<std::unique_ptr<Client>> clients_;
  std::string summary_;
  int tgid_ = 0;
};

}  // namespace

WorkloadInfo oltp_workload() {
  return {"oltp",
          "Swingbench-like OLTP mix: clients think, then run transactions of steps that each "
          "take a random latch (spin lock) asking for a slice extension, and sometimes wait for I/O",
          {{"clients", "1000", "client threads (sessions)"},
           {"latches", "16", "latches (spin locks); each step takes a random one"},
           {"think", "exp:1ms", "think time between transactions (a read of the next call)"},
           {"steps", "4", "steps per transaction"},
           {"work", "exp:50us", "work of one step outside the latch"},
           {"cs", "uniform:1us:5us", "latch hold time"},
           {"io_prob", "0.2", "probability that a step waits for I/O after its latch"},
           {"io", "exp:100us", "I/O wait (a read from disk)"},
           {"hogs", "0", "CPU hog threads (-1 = one per CPU)"},
           hogs_start_param(),
           ext_param("the clients use"),
           nice_param("nice", "the clients"),
           policy_param("normal", "the clients'")},
          [] { return std::make_unique<Oltp>(); }};
}

}  // namespace workloads
