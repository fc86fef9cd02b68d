// Google Benchmarks: the engine's event loop (re-armed timers, as CPUs use them) and a whole
// small simulation. `schedlab bench` measures the full 384-CPU scenario.
#include <benchmark/benchmark.h>

#include "report/results.h"
#include "scenario/experiment.h"
#include "sim/engine.h"
#include "sim/rng.h"

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

}  // namespace

BENCHMARK_MAIN();
