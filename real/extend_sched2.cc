// extend-sched2 on real pthreads (the RFC thread's micro-benchmark, docs/workloads.md): threads take turns on spin-locked
// objects whose critical section is a long empty loop, each asking for a time slice extension
// while it holds the lock; prints the original program's per-thread and summary lines.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <thread>

#include <unistd.h>

#include "real/runner_internal.h"

namespace real::internal {

namespace {

// One object of the original: a counter, its spin-lock word and a done flag. Each object has
// its own cache line, so threads of different objects do not disturb each other.
struct alignas(64) Object {
  std::atomic<uint64_t> x{0};
  std::atomic<uint32_t> lock{0};
  std::atomic<bool> done{false};
  LastCsCpu last;  // guarded by lock
};

// The spin loops look at the clock every kClockEvery turns (the done flag at every turn):
// the window ends when its time is up even if no thread that could set the flag runs.
constexpr uint32_t kClockEvery = 64;

// One turn of the original's spin loops, its rmb(): lfence on x86 (a few cycles, where PAUSE
// takes over a hundred and hands the core to the SMT sibling); arm64's rmb() is `dsb ld`.
inline void spin_rmb() {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ __volatile__("lfence" ::: "memory");
#elif defined(__aarch64__)
  __asm__ __volatile__("dsb ld" ::: "memory");
#else
  std::atomic_thread_fence(std::memory_order_acquire);
#endif
}

// Spins until the lock looks free, then asks for an extension before trying to take it, so a
// preemption right after the exchange is covered. False if the run ended meanwhile.
bool grab_lock(Object* obj, ThreadStats* st, Window* w) {
  for (;;) {
    for (uint32_t turn = 1; obj->lock.load(std::memory_order_relaxed) != 0; ++turn) {
      if (obj->done.load(std::memory_order_relaxed)) return false;
      if (turn % kClockEvery == 0 && w->over(now_ns())) return false;
      spin_rmb();
    }
    slice_request();
    uint32_t expected = 0;
    if (obj->lock.compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                          std::memory_order_relaxed))
      return true;
    slice_withdraw();  // lost the race: no request while spinning (yields if it was granted)
    ++st->blocks;
  }
}

void worker(const Params* p, Object* obj, ThreadStats* st, Window* w) {
  st->backend = setup_worker(*p);
  st->hold_samples_ns.reserve(kHoldSamples);
  w->arrive_and_wait();
  while (!obj->done.load(std::memory_order_relaxed)) {
    const int64_t first_attempt = now_ns();
    if (w->over(first_attempt) || !grab_lock(obj, st, w)) break;
    const int64_t taken = now_ns();
    if (w->over(taken)) {
      // Taken after the window: not a critical section of the run.
      obj->lock.store(0, std::memory_order_release);
      slice_withdraw();
      break;
    }
    record(taken - first_attempt, st->count, &st->wait_total_ns, &st->wait_max_ns,
           &st->wait_min_ns);
    // x++ under the lock; relaxed is enough, the lock orders it.
    obj->last.record(st);
    const uint64_t mine = obj->x.load(std::memory_order_relaxed) + 1;
    obj->x.store(mine, std::memory_order_relaxed);
    busy_iterations(p->cs_iterations);
    obj->lock.store(0, std::memory_order_release);
    if (slice_release()) ++st->dlygrnt;  // granted: the CPU was given back already
    const int64_t hold = now_ns() - taken;
    sample_hold(st, hold);
    record(hold, st->count, &st->total_ns, &st->max_ns, &st->min_ns);
    ++st->count;
    // "Let someone else have a turn": wait until another thread has taken the lock.
    for (uint32_t turn = 1; obj->x.load(std::memory_order_relaxed) == mine &&
                            !obj->done.load(std::memory_order_relaxed);
         ++turn) {
      if (turn % kClockEvery == 0 && w->over(now_ns())) break;
      spin_rmb();
    }
  }
  // Threads of this object still spinning stop at their next turn.
  obj->done.store(true, std::memory_order_relaxed);
  st->slice = thread_counters();
}

}  // namespace

std::string run_extend_sched2(const Params& p, Backend backend, RunResult* out) {
  const int nobj = out->nobj;
  if (p.locks == -1 && p.threads / 10 == 0)
    out->notices.push_back("extend-sched2: nobj = cpus / 10 = 0 would divide by zero in the "
                           "original; using 1 lock object");
  out->ns_per_iteration = measure_ns_per_iteration();
  out->cpus_conf = sysconf(_SC_NPROCESSORS_CONF);
  char line[256];
  std::snprintf(line, sizeof(line),
                "extend-sched2: %d threads on %d lock object(s), %d hog(s), mode %d (backend %s), "
                "%.3f s; critical section %" PRId64 " iterations = %.3f ms",
                p.threads, nobj, p.hogs, p.mode, backend_name(backend),
                static_cast<double>(p.duration_ns) / 1e9, p.cs_iterations,
                static_cast<double>(p.cs_iterations) * out->ns_per_iteration / 1e6);
  out->notices.push_back(line);

  std::unique_ptr<Object[]> objs(new Object[nobj]);
  std::vector<ThreadStats> stats(p.threads);
  std::vector<std::thread> workers;
  workers.reserve(p.threads);
  const int parties = p.threads + hogs_in_process(p);
  Window window(parties, p.duration_ns);
  Hogs hogs;
  // Whatever happens (creating a thread can throw), started workers stop and are joined
  // before this function returns: destroying a joinable std::thread would terminate. The
  // window opens first, so threads still waiting for it see `done` and return.
  struct StopAll {
    Object* objs;
    int nobj;
    std::vector<std::thread>* workers;
    Window* window;
    void set_done() {
      for (int i = 0; i < nobj; ++i) objs[i].done.store(true);
    }
    void operator()() {
      set_done();
      window->open(now_ns());
      for (std::thread& t : *workers)
        if (t.joinable()) t.join();
    }
    ~StopAll() { (*this)(); }
  } stop_all{objs.get(), nobj, &workers, &window};

  // Every thread is created first and waits for the window: creating hundreds of threads
  // while the earlier ones spin would take seconds (the creator gets a 1/N share of the
  // CPUs) and start them at different times.
  const int64_t created_from = now_ns();
  hogs.start(hogs_in_process(p), p.cpus, &window);
  for (int i = 0; i < p.threads; ++i)
    workers.emplace_back(worker, &p, &objs[i % nobj], &stats[i], &window);
  measured_window(&window, parties, created_from, p.duration_ns, out,
                  [&] { stop_all.set_done(); });
  stop_all();
  hogs.stop();

  for (int i = 0; i < nobj; ++i) out->runs += objs[i].x.load();
  for (int i = 0; i < p.threads; ++i) {
    out->total_wait_ns += stats[i].wait_total_ns;
    if (stats[i].backend != backend)
      out->notices.push_back("thread " + std::to_string(i) + " ran with backend " +
                             backend_name(stats[i].backend) + ", not " + backend_name(backend));
  }
  out->threads = std::move(stats);
  return "";
}

void print_extend_sched2(const RunResult& r, std::ostream& out) {
  char line[512];
  for (size_t i = 0; i < r.threads.size(); ++i) {
    const ThreadStats& t = r.threads[i];
    std::snprintf(line, sizeof(line),
                  "thread %zu: count %" PRIu64 " total %s max %s min %s total wait %s max wait %s "
                  "min wait %s #blocks %" PRIu64 " #dlygrnt %" PRIu64 "\n",
                  i, t.count, format_sus(t.total_ns).c_str(), format_sus(t.max_ns).c_str(),
                  format_sus(t.min_ns).c_str(), format_sus(t.wait_total_ns).c_str(),
                  format_sus(t.wait_max_ns).c_str(), format_sus(t.wait_min_ns).c_str(), t.blocks,
                  t.dlygrnt);
    out << line;
  }
  // The averages are integer divisions by the configured CPU count, as the original's longs
  // (it starts one thread per CPU and divides by that count, whatever --threads says here).
  const uint64_t n = static_cast<uint64_t>(std::max(1L, r.cpus_conf));
  uint64_t grants = 0, blocks = 0;
  for (const ThreadStats& t : r.threads) {
    grants += t.dlygrnt;
    blocks += t.blocks;
  }
  std::snprintf(line, sizeof(line),
                "Ran for %" PRIu64 " times\nTotal wait time: %s\navg # grants %" PRIu64
                " avg reqs %" PRIu64 "\navg # blocks %" PRIu64 "\n",
                r.runs, format_sus(r.total_wait_ns).c_str(), grants / n, r.runs / n, blocks / n);
  out << line;
  // Not in the original: where the threads ran (docs/calibration.md, section 2), and the
  // window the numbers were counted in (thread creation before it is not).
  std::snprintf(line, sizeof(line), "same-CPU hand-offs %.1f%%\nmeasured window %.6f s\n",
                100 * r.same_cpu_handoff_share(), r.elapsed_s);
  out << line;
}

}  // namespace real::internal
