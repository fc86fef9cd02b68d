// mm_cid_compaction_test: the selftest of "sched: Run task_mm_cid_work in batches to lower
// latency" (v2 patch 4, tools/testing/selftests/rseq/mm_cid_compaction_test.c). One thread
// per CPU, each pinned to its own CPU, meets the others at a barrier, then sleeps `period`
// `runs` times and reads its rseq mm_cid. A thread whose mm_cid is >= N/2 and that wins a
// trylock becomes the leader; all the others exit. The leader waits for them (pthread_join()
// of each in creation order: a futex wait on its tid word, which the kernel zeroes and wakes
// at the thread's exit, in mm_release(), after exit_signals() dropped the thread's mm_cid),
// then up to `checks` times reads its mm_cid: 0 passes, else it sleeps `period` (after an
// optional busy loop, the batch v1 variant) and reads again; running out of checks fails.
// With one CPU the selftest skips (passes); with no thread at or above N/2 there is no
// leader and the process exits 0 (a pass without a check).
#include <cstdio>
#include <memory>

#include "user/sync.h"
#include "workloads/common.h"

namespace workloads {

namespace {

struct Shared {
  int n = 0;
  int64_t period = 0;
  int runs = 0;
  int checks = 0;
  int64_t busy = 0;
  std::unique_ptr<user::Barrier> barrier;
  kernel::UserWord token;   // the leader's trylock
  std::unique_ptr<kernel::UserWord[]> tid;  // per thread: its pthread tid word, 0 once exited
  int elected = 0;          // threads past the election
  int leader_cpu = -1;
  int leader_cid = -1;      // the mm_cid that made it the leader
  int64_t joined_at = -1;   // the others had exited
  int64_t cid0_at = -1;     // the leader read mm_cid 0
  int checks_done = 0;
  bool failed = false;      // checks exhausted
  bool no_rseq = false;     // rseq_mm_cid_available() false
};

user::Program runner(user::Thread& t, Shared* s, int self) {
  // The tid word exit clears: glibc's main thread registers it with set_tid_address(),
  // pthread_create() passes it to clone() (CLONE_CHILD_CLEARTID); one syscall here.
  co_await t.syscall(kernel::NR_set_tid_address, reinterpret_cast<int64_t>(&s->tid[self]));
  co_await s->barrier->arrive_and_wait(t);
  for (int i = 0; i < s->runs; ++i) co_await t.nanosleep(s->period);
  if (t.rseq() == nullptr) {
    s->no_rseq = true;
    co_return;
  }
  const int cid = static_cast<int>(t.rseq()->mm_cid);
  ++s->elected;
  if (cid < s->n / 2 || !t.cmpxchg(&s->token, 0, 1)) co_return;  // pthread_exit()
  s->leader_cpu = t.cpu();
  s->leader_cid = cid;
  for (int i = 0; i < s->n; ++i) {  // pthread_join() of every other thread
    if (i == self) continue;
    for (int64_t v = t.load(&s->tid[i]); v != 0; v = t.load(&s->tid[i]))
      co_await t.futex_wait(&s->tid[i], v);
  }
  s->joined_at = t.now();
  for (int i = 0; i < s->checks; ++i) {
    s->checks_done = i + 1;
    if (t.rseq()->mm_cid == 0) {
      s->cid0_at = t.now();
      co_return;  // exit(EXIT_SUCCESS)
    }
    if (s->busy > 0) co_await t.compute(s->busy);
    co_await t.nanosleep(s->period);
  }
  s->failed = true;  // exit(EXIT_FAILURE)
}

class MmCidCompactionTest : public Workload {
 public:
  std::string setup(kernel::Kernel& k, const Params& p, uint64_t seed) override {
    s_.n = k.nr_cpus();
    s_.period = p.get_ns("period");
    int runs = p.get_int_in("runs", -1, kMaxThreads);
    s_.checks = p.get_int_in("checks", 1, kMaxThreads);
    s_.busy = p.get_ns("busy");
    if (!p.error().empty()) return p.error();
    if (s_.period <= 0) return "period: must be > 0 (got '" + p.get("period") + "')";
    if (s_.busy < 0) return "busy: must be >= 0 (got '" + p.get("busy") + "')";
    // v2 patch 4: 3 + ncpus / 8 sleeps, more on larger machines.
    s_.runs = runs < 0 ? 3 + s_.n / 8 : runs;
    if (s_.n == 1) return "";  // "skipping: needs more than one CPU"
    s_.barrier = std::make_unique<user::Barrier>(s_.n);
    s_.tid = std::make_unique<kernel::UserWord[]>(static_cast<size_t>(s_.n));
    for (int i = 0; i < s_.n; ++i) s_.tid[i].value = i + 1;  // CLONE_PARENT_SETTID: the thread id
    tgid_ = k.create_process("mm_cid_compaction_test");
    for (int cpu = 0; cpu < s_.n; ++cpu) {
      kernel::TaskAttr attr;
      attr.comm = "mm_cid_compact";
      attr.cpus = {cpu};
      auto th = std::make_unique<user::Thread>(&k, sim::Rng(seed, cpu));
      th->start(runner(*th, &s_, cpu));
      k.create_thread(tgid_, attr, std::move(th));
    }
    return "";
  }

  void report(const kernel::KernelStats&, sim::Time duration, report::Results* r) override {
    const bool skipped = s_.n == 1;
    const bool no_leader = !s_.no_rseq && s_.elected == s_.n && s_.leader_cid < 0;
    const bool passed = skipped || no_leader || s_.cid0_at >= 0;
    const auto ms = [](int64_t ns) { return static_cast<double>(ns) / 1e6; };
    const auto ms_str = [&](int64_t ns) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g ms", ms(ns));
      return std::string(buf);
    };
    std::string verdict;
    if (skipped) {
      verdict = "pass (skipped: one CPU)";
    } else if (s_.no_rseq) {
      verdict = "fail: rseq mm_cid not available";
    } else if (no_leader) {
      verdict = "pass without a check: no thread had mm_cid >= " + std::to_string(s_.n / 2);
    } else if (s_.leader_cid < 0 || (!s_.failed && s_.cid0_at < 0)) {
      verdict = "fail: no verdict within the run (" + ms_str(duration) + "); it needs about " +
                ms_str((s_.runs + s_.checks) * s_.period) + " plus the busy loops";
    } else {
      verdict = std::string(passed ? "pass" : "fail") + ": leader on CPU " +
                std::to_string(s_.leader_cpu) + " with mm_cid " + std::to_string(s_.leader_cid) +
                (passed ? " read mm_cid 0 at check " + std::to_string(s_.checks_done)
                        : " never read mm_cid 0 in " + std::to_string(s_.checks) + " checks");
    }
    r->notices.push_back("mm_cid_compaction_test: " + std::to_string(s_.n) + " threads, " +
                         std::to_string(s_.runs) + " x " + ms_str(s_.period) + " sleeps; " +
                         verdict);
    r->metrics.push_back({"pass", passed ? 1.0 : 0.0, "", "1 if the selftest passed, else 0"});
    r->metrics.push_back({"time_to_cid0_ms",
                          s_.cid0_at >= 0 ? ms(s_.cid0_at - s_.joined_at) : -1.0, "ms",
                          "from the others' exit to the leader reading mm_cid 0 (-1: never)"});
    r->metrics.push_back({"leader_mm_cid", static_cast<double>(s_.leader_cid), "",
                          "the mm_cid that made the leader (-1: no leader)"});
    r->metrics.push_back({"checks", static_cast<double>(s_.checks_done), "",
                          "reads of mm_cid the leader made"});
  }

 private:
  Shared s_;
  int tgid_ = 0;
};

}  // namespace

WorkloadInfo mm_cid_compaction_test_workload() {
  return {"mm_cid_compaction_test",
          "the mm_cid compaction selftest: one pinned thread per CPU exit, the leader waits for mm_cid 0",
          {{"period", "50ms", "each sleep of the threads and of the leader between checks"},
           {"runs", "-1", "sleeps before the election (-1 = 3 + CPUs / 8)"},
           {"checks", "10", "reads of mm_cid the leader makes before it fails"},
           {"busy", "0", "user CPU time the leader burns before each sleep (0 = none; batch v1's busy loop)"}},
          [] { return std::make_unique<MmCidCompactionTest>(); }};
}

}  // namespace workloads
