// locktable on real pthreads: the database lock-table pattern the RFC was written for. Each
// client runs a query outside the lock, then a short critical section under a table spin lock
// (real::SliceSpinLock, so the section asks for an extension); reports executions per second.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <memory>
#include <thread>

#include "real/runner_internal.h"

namespace real::internal {

namespace {

// One lock of the table, on its own cache line (a real lock table pads its latches too).
struct alignas(64) TableLock {
  SliceSpinLock lock;
  LastCsCpu last;  // guarded by lock
};

struct Work {
  int64_t query_iterations;
  int64_t cs_iterations;
};

// How often (in spin turns) a client waiting for the lock looks at the clock.
constexpr uint32_t kClockEvery = 64;

// Takes the lock as SliceSpinLock::lock() does (a request only when the lock looks free,
// then the exchange; spin while it is held), watching the run's end meanwhile: while the
// holder is preempted, N clients can spin for seconds. False if the run ended first.
bool take(TableLock* table_lock, const std::atomic<bool>* stop, Window* w) {
  for (uint32_t turn = 1; !table_lock->lock.try_lock(); ++turn) {
    if (stop->load(std::memory_order_relaxed)) return false;
    if (turn % kClockEvery == 0 && w->over(now_ns())) return false;
    cpu_relax();
  }
  return true;
}

void client(const Params* p, Work work, TableLock* table_lock, const std::atomic<bool>* stop,
            ThreadStats* st, Window* w) {
  st->backend = setup_worker(*p);
  st->hold_samples_ns.reserve(kHoldSamples);
  w->arrive_and_wait();
  while (!stop->load(std::memory_order_relaxed)) {
    busy_iterations(work.query_iterations);  // the query, outside the lock
    const int64_t first_attempt = now_ns();
    // An execution counts if it took the lock inside the window.
    if (w->over(first_attempt) || !take(table_lock, stop, w)) break;
    const int64_t taken = now_ns();
    record(taken - first_attempt, st->count, &st->wait_total_ns, &st->wait_max_ns,
           &st->wait_min_ns);
    table_lock->last.record(st);
    busy_iterations(work.cs_iterations);
    table_lock->lock.unlock();  // releases the request, yields if it was granted
    const int64_t hold = now_ns() - taken;
    sample_hold(st, hold);
    record(hold, st->count, &st->total_ns, &st->max_ns, &st->min_ns);
    ++st->count;
  }
  st->slice = thread_counters();
  st->dlygrnt = st->slice.grants;
}

}  // namespace

std::string run_locktable(const Params& p, Backend backend, RunResult* out) {
  const int nlocks = out->nobj;
  out->ns_per_iteration = measure_ns_per_iteration();
  // Work is a number of loop iterations, not a deadline: a preempted holder must still do the
  // whole critical section when it runs again, as real work would.
  const Work work{std::llround(static_cast<double>(p.query_ns) / out->ns_per_iteration),
                  std::llround(static_cast<double>(p.cs_ns) / out->ns_per_iteration)};
  char line[256];
  std::snprintf(line, sizeof(line),
                "locktable: %d clients on %d lock(s), %d hog(s), query %.1f us, critical section "
                "%.1f us, mode %d (backend %s), %.3f s",
                p.clients, nlocks, p.hogs, static_cast<double>(p.query_ns) / 1e3,
                static_cast<double>(p.cs_ns) / 1e3, p.mode, backend_name(backend),
                static_cast<double>(p.duration_ns) / 1e9);
  out->notices.push_back(line);

  std::unique_ptr<TableLock[]> locks(new TableLock[nlocks]);
  std::vector<ThreadStats> stats(p.clients);
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  clients.reserve(p.clients);
  const int parties = p.clients + hogs_in_process(p);
  Window window(parties, p.duration_ns);
  Hogs hogs;
  // Started clients stop and are joined on every way out (creating a thread can throw); the
  // window opens first so that clients still waiting for it return.
  struct StopAll {
    std::atomic<bool>* stop;
    std::vector<std::thread>* clients;
    Window* window;
    void operator()() {
      stop->store(true);
      window->open(now_ns());
      for (std::thread& t : *clients)
        if (t.joinable()) t.join();
    }
    ~StopAll() { (*this)(); }
  } stop_all{&stop, &clients, &window};

  // All threads exist and wait for the window before it opens (as in extend-sched2).
  const int64_t created_from = now_ns();
  hogs.start(hogs_in_process(p), p.cpus, &window);
  for (int i = 0; i < p.clients; ++i)
    clients.emplace_back(client, &p, work, &locks[i % nlocks], &stop, &stats[i], &window);
  measured_window(&window, parties, created_from, p.duration_ns, out,
                  [&] { stop.store(true); });
  stop_all();
  hogs.stop();

  for (int i = 0; i < p.clients; ++i) {
    out->runs += stats[i].count;
    out->total_wait_ns += stats[i].wait_total_ns;
    if (stats[i].backend != backend)
      out->notices.push_back("client " + std::to_string(i) + " ran with backend " +
                             backend_name(stats[i].backend) + ", not " + backend_name(backend));
  }
  out->threads = std::move(stats);
  return "";
}

void print_locktable(const RunResult& r, std::ostream& out) {
  char line[512];
  Counters sum;
  for (size_t i = 0; i < r.threads.size(); ++i) {
    const ThreadStats& t = r.threads[i];
    std::snprintf(line, sizeof(line),
                  "client %zu: executions %" PRIu64 " total wait %s max wait %s max hold %s "
                  "#grants %" PRIu64 " #denials %" PRIu64 "\n",
                  i, t.count, format_sus(t.wait_total_ns).c_str(),
                  format_sus(t.wait_max_ns).c_str(), format_sus(t.max_ns).c_str(),
                  t.slice.grants, t.slice.denials);
    out << line;
    sum.requests += t.slice.requests;
    sum.grants += t.slice.grants;
    sum.yields += t.slice.yields;
    sum.denials += t.slice.denials;
  }
  std::snprintf(line, sizeof(line),
                "Executions: %" PRIu64 " in %.3f s = %.1f per second\nTotal wait time: %s\n"
                "requests %" PRIu64 " grants %" PRIu64 " yields %" PRIu64 " denials %" PRIu64 "\n"
                "same-CPU hand-offs %.1f%%\n",
                r.runs, r.elapsed_s, r.executions_per_s(), format_sus(r.total_wait_ns).c_str(),
                sum.requests, sum.grants, sum.yields, sum.denials, 100 * r.same_cpu_handoff_share());
  out << line;
}

}  // namespace real::internal
