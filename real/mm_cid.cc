// `schedlab real mm_cid_compaction_test`: the procedure of the mm_cid compaction selftest
// (batched series v2 patch 4, tools/testing/selftests/rseq/mm_cid_compaction_test.c) on this
// host's kernel, repeated in fresh processes, with the distribution of the time the leader
// needs to read mm_cid 0. Each run is a child process (a fresh mm): one thread per allowed
// CPU, each pinned to its own, meets the others at a barrier, sleeps `period` 3 + N/8 times
// and reads its rseq mm_cid (struct rseq offset 24, glibc's registration); a thread with
// mm_cid >= N/2 that wins a trylock leads, the others exit; the leader joins them, then up to
// `checks` times reads mm_cid: 0 passes, else it burns `busy` (batch v1's busy loop) and
// sleeps `period`. The child reports the leader's first mm_cid and the time from the join to
// the read of 0 (or a failure) through a pipe.
#include <pthread.h>
#include <sched.h>
#include <sys/auxv.h>
#include <sys/rseq.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "real/runner.h"

namespace real {

namespace {

constexpr unsigned kAtRseqFeatureSize = 27;  // AT_RSEQ_FEATURE_SIZE (uapi auxvec.h)
constexpr unsigned kRseqMmCidEnd = 28;       // offsetofend(struct rseq, mm_cid)

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void sleep_ns(int64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0) {
  }
}

// This thread's rseq mm_cid, as glibc registered the area (__rseq_offset from the thread
// pointer).
uint32_t read_mm_cid() {
  const char* area = static_cast<const char*>(__builtin_thread_pointer()) + __rseq_offset;
  return __atomic_load_n(reinterpret_cast<const uint32_t*>(area + 24), __ATOMIC_RELAXED);
}

struct Shared {
  int n = 0;
  int runs = 0;
  int checks = 0;
  int64_t period = 0, busy = 0;
  std::vector<int> cpus;
  pthread_barrier_t barrier;
  pthread_mutex_t token = PTHREAD_MUTEX_INITIALIZER;
  std::vector<pthread_t> threads;
  int out_fd = -1;
};

struct Report {
  int leader_cid = -1;      // -1: no leader (a pass without a check)
  int64_t to_cid0_ns = -1;  // -1: never read 0
  int checks = 0;
};

struct Arg {
  Shared* s;
  int index;
};

void* thread_fn(void* p) {
  Arg* a = static_cast<Arg*>(p);
  Shared* s = a->s;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(s->cpus[static_cast<size_t>(a->index)], &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  pthread_barrier_wait(&s->barrier);
  for (int i = 0; i < s->runs; ++i) sleep_ns(s->period);
  const int cid = static_cast<int>(read_mm_cid());
  if (cid < s->n / 2 || pthread_mutex_trylock(&s->token) != 0) return nullptr;
  Report r;
  r.leader_cid = cid;
  for (int i = 0; i < s->n; ++i)
    if (i != a->index) pthread_join(s->threads[static_cast<size_t>(i)], nullptr);
  const int64_t joined = now_ns();
  for (int i = 0; i < s->checks; ++i) {
    r.checks = i + 1;
    if (read_mm_cid() == 0) {
      r.to_cid0_ns = now_ns() - joined;
      break;
    }
    if (s->busy > 0) {
      const int64_t until = now_ns() + s->busy;
      while (now_ns() < until) {
      }
    }
    sleep_ns(s->period);
  }
  if (write(s->out_fd, &r, sizeof r) != static_cast<ssize_t>(sizeof r)) _exit(3);
  _exit(r.to_cid0_ns >= 0 ? 0 : 1);
}

// One run in a child process; false with `err` set if it could not be run.
bool run_once(const std::vector<int>& cpus, int64_t period, int checks, int64_t busy,
              Report* out, std::string* err) {
  int fds[2];
  if (pipe(fds) != 0) return *err = "pipe failed", false;
  const pid_t pid = fork();
  if (pid < 0) return *err = "fork failed", false;
  if (pid == 0) {
    close(fds[0]);
    static Shared s;
    s.n = static_cast<int>(cpus.size());
    s.runs = 3 + s.n / 8;  // v2: more sleeps on larger machines
    s.checks = checks;
    s.period = period;
    s.busy = busy;
    s.cpus = cpus;
    s.out_fd = fds[1];
    s.threads.resize(cpus.size());
    pthread_barrier_init(&s.barrier, nullptr, static_cast<unsigned>(s.n));
    static std::vector<Arg> args;
    for (int i = 0; i < s.n; ++i) args.push_back({&s, i});
    for (int i = 0; i < s.n; ++i)
      pthread_create(&s.threads[static_cast<size_t>(i)], nullptr, thread_fn, &args[static_cast<size_t>(i)]);
    pthread_exit(nullptr);  // the main thread is not a selftest thread here; the process lives on
  }
  close(fds[1]);
  Report r;
  const ssize_t got = read(fds[0], &r, sizeof r);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  *out = got == static_cast<ssize_t>(sizeof r) ? r : Report{};
  return true;
}

int64_t percentile(std::vector<int64_t> v, double q) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace

int mm_cid_main(int runs, int64_t period, int checks, int64_t busy, const std::vector<int>& cpus_in) {
  if (__rseq_size == 0) {
    std::fprintf(stderr, "schedlab real: error: rseq is not registered (glibc tunable glibc.pthread.rseq=0?)\n");
    return 2;
  }
  if (getauxval(kAtRseqFeatureSize) < kRseqMmCidEnd) {
    std::fprintf(stderr, "schedlab real: error: this kernel's rseq has no mm_cid (AT_RSEQ_FEATURE_SIZE %lu < 28)\n",
                 getauxval(kAtRseqFeatureSize));
    return 2;
  }
  std::vector<int> cpus = cpus_in;
  if (cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  utsname u;
  uname(&u);
  std::printf("mm_cid_compaction_test on %s %s, %zu CPUs, %d runs, period %.0f ms, %d checks, busy %.0f ms\n",
              u.sysname, u.release, cpus.size(), runs, static_cast<double>(period) / 1e6, checks,
              static_cast<double>(busy) / 1e6);
  if (cpus.size() < 2) {
    std::printf("skipped: needs more than one CPU\n");
    return 0;
  }
  int passed = 0, no_leader = 0;
  std::vector<int64_t> times;
  std::vector<int> leader_cids, checks_at_cid0;
  for (int i = 0; i < runs; ++i) {
    Report r;
    std::string err;
    if (!run_once(cpus, period, checks, busy, &r, &err)) {
      std::fprintf(stderr, "schedlab real: error: %s\n", err.c_str());
      return 1;
    }
    if (r.leader_cid < 0) {
      ++no_leader;
      ++passed;
      continue;
    }
    leader_cids.push_back(r.leader_cid);
    if (r.to_cid0_ns >= 0) {
      ++passed;
      times.push_back(r.to_cid0_ns);
      checks_at_cid0.push_back(r.checks);
    }
  }
  const auto ms = [](int64_t ns) { return ns < 0 ? -1.0 : static_cast<double>(ns) / 1e6; };
  std::printf("  passed                %d of %d (%d without a leader)\n", passed, runs, no_leader);
  std::printf("  time_to_cid0_ms       min %.3f  p50 %.3f  p90 %.3f  max %.3f  (%zu runs that read 0)\n",
              ms(percentile(times, 0.0)), ms(percentile(times, 0.5)), ms(percentile(times, 0.9)),
              ms(percentile(times, 1.0)), times.size());
  std::string cids;
  for (int c : leader_cids) cids += " " + std::to_string(c);
  std::printf("  leader_mm_cid        %s\n", cids.c_str());
  std::string at;
  for (int c : checks_at_cid0) at += " " + std::to_string(c);
  std::printf("  check_that_read_0    %s\n", at.c_str());
  return 0;
}

}  // namespace real
