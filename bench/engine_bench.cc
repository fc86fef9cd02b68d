// Google Benchmarks: the engine's event loop (re-armed timers, as CPUs use them), a whole
// small simulation, load balancing on 384 and 4096 CPUs, the OLTP load's steps, and setting
// up a thread per CPU on 1024 and 8192 CPUs.
// `schedlab bench --scenario NAME` measures whole scenarios.
#include <benchmark/benchmark.h>

#include "report/results.h"
#include "scenario/experiment.h"
#include "sim/engine.h"
#include "sim/rng.h"

#include <string>
#include <vector>

namespace {

struct Ctx {
  sim::Engine* e;
  sim::Rng rng{1, 1};
};

void rearm(sim::Timer* t, sim::Time now) {
  Ctx* c = static_cast<Ctx*>(t->ctx);
  c->e->arm(t, now + 1 + static_cast<sim::Time>(c->rng.next_u64() % 10000));
}

void BM_EngineRearmingTimers(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  sim::Engine e;
  Ctx c{&e};
  std::vector<sim::Timer> timers(n);
  for (auto& t : timers) {
    t.fn = rearm;
    t.ctx = &c;
    e.arm(&t, 1 + static_cast<sim::Time>(c.rng.next_u64() % 10000));
  }
  sim::Time end = 0;
  for (auto _ : state) {
    end += 100000;
    e.run_until(end);
  }
  state.SetItemsProcessed(static_cast<int64_t>(e.events_fired()));
}
BENCHMARK(BM_EngineRearmingTimers)->Arg(64)->Arg(1000)->Arg(10000);

void BM_SpinlockVm50(benchmark::State& state) {
  uint64_t events = 0;
  for (auto _ : state) {
    scenario::Experiment e;
    for (const char* s : {"workload=spinlock", "machine=vm50", "threads=100", "locks=10",
                          "hogs=50", "duration=200ms"})
      scenario::set_assignment(&e, s);
    report::Results r;
    scenario::run(e, &r);
    events += r.events;
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
}
BENCHMARK(BM_SpinlockVm50)->Unit(benchmark::kMillisecond);

// One simulation of `sets` per iteration; items are engine events, so the figure is events/s.
void run_scenario(benchmark::State& state, std::vector<std::string> sets) {
  uint64_t events = 0;
  for (auto _ : state) {
    scenario::Experiment e;
    for (const std::string& s : sets) scenario::set_assignment(&e, s);
    report::Results r;
    scenario::run(e, &r);
    events += r.events;
  }
  state.SetItemsProcessed(static_cast<int64_t>(events));
}

// Balancing on a wide machine: twice as many hogs as CPUs, forked on few CPUs and spread by
// fork placement and periodic balancing (sched_balance_domains() at every tick of every busy
// CPU, HZ=1000), for 20 ms simulated: genoa (384 CPUs) and synth:16x128x2 (4096 CPUs, 16
// sockets of 16 LLCs). Setup (the machine's domains) is included.
void BM_BalanceHogs(benchmark::State& state) {
  const int cpus = static_cast<int>(state.range(0));
  run_scenario(state, {"workload=hog", cpus == 384 ? "machine=genoa" : "machine=synth:16x128x2",
                       "threads=" + std::to_string(2 * cpus), "hz=1000", "duration=20ms"});
}
BENCHMARK(BM_BalanceHogs)->Arg(384)->Arg(4096)->Unit(benchmark::kMillisecond);

// The OLTP load's steps (1000 clients: think, latch, I/O wait) on genoa, 50 ms simulated.
void BM_OltpGenoa(benchmark::State& state) {
  run_scenario(state, {"workload=oltp", "machine=genoa", "duration=50ms"});
}
BENCHMARK(BM_OltpGenoa)->Unit(benchmark::kMillisecond);

// Setting up a wide machine: its domains and one hog forked per CPU (each fork's affinity,
// cpuset and mm_cid state), then 1 ms simulated: synth:4x128x2 (1024 CPUs) and
// synth:16x256x2 (8192). Linear in the CPUs: a fork reads no whole CPU mask.
void BM_SetupThreadPerCpu(benchmark::State& state) {
  const int cpus = static_cast<int>(state.range(0));
  run_scenario(state, {"workload=hog", cpus == 1024 ? "machine=synth:4x128x2" : "machine=synth:16x256x2",
                       "threads=" + std::to_string(cpus), "duration=1ms"});
}
BENCHMARK(BM_SetupThreadPerCpu)->Arg(1024)->Arg(8192)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
