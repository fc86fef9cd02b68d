// extend-sched2: the slice extension micro-benchmark of the RFC thread (December 2024,
// derived from Steven Rostedt's test). One thread per CPU; threads share nobj = threads / 10 lock
// objects (at least 1) and take turns: spin until the object's lock looks free, ask for an
// extension, cmpxchg the lock, count, run a long critical section (3,000,000 iterations of an
// -O0 empty loop: machine().cs_loop_3m_ns), release the lock and the request (yield if it was
// granted), then spin until another thread has had its turn. Reports runs per second, the
// wait for the lock, grants and blocks, and the original program's printout (Results::output).
#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "sim/stats.h"
#include "user/slice_ext.h"
#include "user/sync.h"
#include "workloads/common.h"
#include "workloads/lock_common.h"

namespace workloads {


namespace {

// One object of the original: a counter and its spin-lock word (the `done` flag is the end of
// the simulated run). `nthreads` is how many threads use it.
struct Object {
  user::SpinLock lock;
  kernel::UserWord x;
  int nthreads = 0;
  CsCpuTrail trail;  // where its critical sections ran
};

// One thread's numbers, as the original keeps them.
struct Worker {
  explicit Worker(user::SliceAbi abi) : ext(abi) {}
  user::SliceExtClient ext;
  int64_t init_ret = 0;
  Object* obj = nullptr;
  uint64_t count = 0;    // critical sections done (x_count)
  sim::Summary hold;     // lock taken -> lock and request released (and the yield)
  sim::Summary wait;     // first attempt -> lock taken
  uint64_t blocks = 0;   // lost exchanges after seeing the lock free
  uint64_t dlygrnt = 0;  // critical sections whose extension was granted
};

struct Shared {
  const hw::Machine* machine = nullptr;
  Dist cs;
};

// grab_lock and the rest of the original's loop, steps 1-7 (docs/workloads.md).
user::Program es2_worker(user::Thread& t, const Shared* s, Worker* w) {
  w->init_ret = co_await w->ext.init(t);
  Object* o = w->obj;
  for (;;) {
    const int64_t first_attempt = t.now();
    for (;;) {
      co_await o->lock.wait_unlocked(t);  // 1. spin while the lock word is set
      w->ext.request(t);                  // 2. ask for an extension
      // 3. cmpxchg(lock, 0, 1). The exchange needs the lock's cache line exclusive: one line
      // transfer from its last writer, plus a random share of another for the order in which
      // the coherence fabric serves the spinners that all saw the lock free. One of them wins,
      // the others fail. (The model's memory operations are otherwise instantaneous: without
      // this no exchange would ever fail, and the latest spinner would always win.)
      const int writer = o->lock.word()->last_writer_cpu;
      const int64_t line = s->machine->line_transfer_ns(writer < 0 ? t.cpu() : writer, t.cpu());
      co_await t.compute(line + t.rng().uniform_int(0, line));
      if (o->lock.try_lock(t)) break;
      if (w->ext.release(t)) co_await w->ext.yield(t);
      w->blocks++;
    }
    // 4. got it: the wait since the first attempt, x++, the critical section.
    const int64_t taken = t.now();
    w->wait.add(taken - first_attempt);
    o->trail.record(t.cpu());
    const int64_t mine = t.fetch_add(&o->x, 1) + 1;
    co_await t.compute(s->cs.sample(t.rng()));
    // 5. release the lock, then the request; give the CPU back if it was granted.
    o->lock.unlock(t);
    if (w->ext.release(t)) {
      w->dlygrnt++;
      co_await w->ext.yield(t);
    }
    // 6. the hold time.
    w->hold.add(t.now() - taken);
    w->count++;
    // 7. let someone else have a turn: spin until x changes (never, if alone on the object).
    if (o->nthreads > 1) co_await t.spin_while_eq(&o->x, mine);
  }
}

// "S.UUUUUU": seconds and microseconds, as the original prints times.
std::string sus(int64_t ns) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%" PRId64 ".%06" PRId64, ns / 1000000000, (ns % 1000000000) / 1000);
  return buf;
}

class ExtendSched2 : public Workload {
 public:
  std::string setup(kernel::Kernel& k, const Params& p, uint64_t seed) override {
    int threads = p.get_int_in("threads", 0, kMaxThreads);
    int nobj = p.get_int_in("locks", 0, kMaxThreads);
    const int64_t gap = p.get_ns("start_gap");
    if (!p.error().empty()) return p.error();
    if (gap < 0) return "start_gap: must be >= 0";
    if (std::string e = parse_slice_abi(p, true, &abi_); !e.empty()) return e;
    if (std::string e = parse_dist("cs", p.get("cs"), &s_.cs); !e.empty()) return e;
    if (s_.cs.kind == Dist::Const && s_.cs.a == 0) s_.cs.a = k.machine().cs_loop_3m_ns;
    if (s_.cs.always_zero()) return "cs: always 0, so a worker's loop could take no time";
    if (std::string e = parse_hogs(p, k.nr_cpus(), -1, &hogs_); !e.empty()) return e;
    if (threads < 0) return "threads: must be >= 0 (0 = one per CPU)";
    if (threads == 0) threads = k.nr_cpus();
    nr_cpus_ = k.nr_cpus();
    if (threads > 1 && gap > (int64_t{1} << 62) / threads)
      return "start_gap: too large (the last worker would start after the end of time)";
    if (nobj < 0) return "locks: must be >= 0 (0 = threads / 10, as the original)";
    if (nobj > threads)
      return "locks: more lock objects than threads (" + std::to_string(nobj) + " > " +
             std::to_string(threads) + ")";
    if (nobj == 0) {
      nobj = threads / 10;
      if (nobj == 0) {
        nobj = 1;
        notices_.push_back("the original divides by zero below 10 CPUs: using 1 lock object");
      }
    }
    objs_ = std::vector<Object>(static_cast<size_t>(nobj));
    s_.machine = &k.machine();
    kernel::TaskAttr attr;
    attr.comm = "extend-sched2";
    bool hogs_before = true;
    if (std::string e = parse_hogs_start(p, &hogs_before); !e.empty()) return e;
    HogsAs hogs_as = HogsAs::kThreads;
    if (std::string e = parse_hogs_as(p, &hogs_as); !e.empty()) return e;
    if (hogs_before)
      if (std::string e = spawn_hogs(k, hogs_, 0, SCHED_NORMAL, seed, hogs_as); !e.empty()) return e;
    tgid_ = k.create_process("extend-sched2");
    for (int i = 0; i < threads; ++i) {
      workers_.push_back(std::make_unique<Worker>(abi_));
      Worker* w = workers_.back().get();
      w->obj = &objs_[static_cast<size_t>(i % nobj)];
      w->obj->nthreads++;
      auto th = std::make_unique<user::Thread>(&k, sim::Rng(seed, i));
      th->start(es2_worker(*th, &s_, w));
      // The original's main thread creates the workers one after another.
      k.create_thread(tgid_, attr, std::move(th), gap * i);
    }
    if (std::any_of(objs_.begin(), objs_.end(), [](const Object& o) { return o.nthreads == 1; }))
      notices_.push_back("a lock object has a single thread: its thread skips step 7 (waiting for "
                         "another thread's turn), which would never end");
    char line[200];
    std::snprintf(line, sizeof(line),
                  "extend-sched2: %d threads on %d lock object(s), %d hog(s), mode %d (%s), "
                  "critical section %.3f ms",
                  threads, nobj, hogs_, static_cast<int>(abi_), kernel::slice_ext_abi_name(abi_),
                  s_.cs.mean() / 1e6);
    notices_.insert(notices_.begin(), line);
    return hogs_before ? "" : spawn_hogs(k, hogs_, 0, SCHED_NORMAL, seed, hogs_as);
  }

  void report(const kernel::KernelStats& ks, sim::Time duration, report::Results* r) override {
    const double secs = static_cast<double>(duration) / 1e9;
    uint64_t runs = 0, grants = 0, blocks = 0, starved = 0;
    int64_t total_wait = 0;
    for (const Object& o : objs_) runs += static_cast<uint64_t>(o.x.value);
    for (const auto& w : workers_) {
      grants += w->dlygrnt;
      blocks += w->blocks;
      total_wait += w->wait.sum;
      starved += w->count == 0;
    }
    const double n = workers_.empty() ? 1.0 : static_cast<double>(workers_.size());
    auto add = [r](const char* name, double v, const char* unit, const char* help) {
      r->metrics.push_back({name, v, unit, help});
    };
    add("runs_per_second", static_cast<double>(runs) / secs, "1/s",
        "critical sections started per second (sum of the objects' x)");
    add("runs", static_cast<double>(runs), "", "the original's \"Ran for N times\"");
    add("total_wait_seconds", static_cast<double>(total_wait) / 1e9, "s",
        "sum over threads of the time from first attempt to lock taken");
    add("avg_grants", static_cast<double>(grants) / n, "", "critical sections granted an extension, per thread");
    add("avg_reqs", static_cast<double>(runs) / n, "", "runs per thread (the original's \"avg reqs\")");
    add("avg_blocks", static_cast<double>(blocks) / n, "", "lost exchanges per thread");
    add("starved_threads", static_cast<double>(starved), "",
        "threads that never completed a critical section (their wait is in no total)");
    std::vector<CsCpuTrail> trails;
    for (const Object& o : objs_) trails.push_back(o.trail);
    report_same_cpu_handoffs(trails, r);
    for (const std::string& s : notices_) r->notices.push_back(s);
    report_client_lock_metrics(ks, tgid_, duration, abi_, workers_, r);

    // The original's printout. The averages are integer divisions, as its longs, by the
    // configured CPU count (sysconf(_SC_NPROCESSORS_CONF)): the original starts one thread per
    // CPU and divides by that count, so with `threads` set the line still divides by the CPUs.
    const uint64_t nt = static_cast<uint64_t>(std::max(1, nr_cpus_));
    char line[400];
    for (size_t i = 0; i < workers_.size(); ++i) {
      const Worker& w = *workers_[i];
      const bool any = w.hold.count > 0, waited = w.wait.count > 0;
      std::snprintf(line, sizeof(line),
                    "thread %zu: count %" PRIu64 " total %s max %s min %s total wait %s max wait %s "
                    "min wait %s #blocks %" PRIu64 " #dlygrnt %" PRIu64,
                    i, w.count, sus(w.hold.sum).c_str(), sus(any ? w.hold.max : 0).c_str(),
                    sus(any ? w.hold.min : 0).c_str(), sus(w.wait.sum).c_str(),
                    sus(waited ? w.wait.max : 0).c_str(), sus(waited ? w.wait.min : 0).c_str(),
                    w.blocks, w.dlygrnt);
      r->output.push_back(line);
    }
    r->output.push_back("Ran for " + std::to_string(runs) + " times");
    r->output.push_back("Total wait time: " + sus(total_wait));
    r->output.push_back("avg # grants " + std::to_string(grants / nt) + " avg reqs " +
                         std::to_string(runs / nt));
    r->output.push_back("avg # blocks " + std::to_string(blocks / nt));
  }

 private:
  Shared s_;
  user::SliceAbi abi_ = user::SliceAbi::None;
  std::vector<Object> objs_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::string> notices_;
  int hogs_ = 0;
  int tgid_ = 0;
  int nr_cpus_ = 1;
};

}  // namespace

WorkloadInfo extend_sched2_workload() {
  return {"extend-sched2",
          "RFC micro-benchmark: one thread per CPU taking turns on spin-locked objects with a "
          "long critical section, asking for a slice extension",
          {{"threads", "0", "worker threads (0 = one per CPU, as the original)"},
           {"locks", "0", "lock objects (0 = threads / 10, at least 1, as the original)"},
           {"cs", "0", "critical section (0 = the machine's cs_loop_3m_ns: 3,000,000 -O0 iterations)"},
           {"hogs", "0", "CPU hog threads beside the workers (-1 = one per CPU, as reported)"},
           hogs_start_param(),
           hogs_as_param(),
           ext_param("the workers use"),
           {"mode", "", "the original's mode 0..3 (none, rfc, rseq2023, mainline); wins over ext"},
           {"start_gap", "0", "time between two worker starts (pthread_create in a loop)"}},
          [] { return std::make_unique<ExtendSched2>(); }};
}

}  // namespace workloads
