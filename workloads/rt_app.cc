// rt-app: runs an rt-app JSON description (workloads/rt_app.h) as rt-app 1.0 runs it
// (src/rt-app.c, thread_body() and run_event()): each task's instances loop over its phases,
// each phase over its events. "run" N is N us of CPU (rt-app's calibrated loadwait(); no
// frequency scaling is modelled), "runtime" N runs loadwait(32) until N us of wall time have
// passed, "sleep" a nanosleep, "timer" a clock_nanosleep(TIMER_ABSTIME) to the timer's next
// period (every thread's timers start from the time base thread 0 reads before the start
// barrier, t_zero), "lock"/"unlock" futex mutexes, "wait"/"signal"/"broad" futex condition
// variables, "sync" a signal then a wait (the file holds the mutex around it), "barrier"
// rt-app's mutex, condition variable and waiting count, "mem" and "iorun" CPU work at the
// rates of the workload's parameters, "yield" sched_yield(), "suspend"/"resume" a wait on and
// a broadcast to the condition variable of a thread's name.
// Reports per task what rt-app's log has per line (one line per phase run): the runs of each
// phase, the time in run events, and for timers the slack and the wake-up latency.
#include <algorithm>
#include <climits>

#include "user/sync.h"
#include "workloads/common.h"
#include "workloads/rt_app.h"

namespace workloads {

namespace {

// A condition variable over a futex sequence word (as glibc's, without its fairness groups):
// a waiter sleeps while the sequence is unchanged; signal and broadcast bump it and wake, and
// return at once when nobody waits (glibc's __wrefs count).
struct CondVar {
  user::UserWord seq;
  int waiters = 0;
};

// rt-app's barrier resource: a mutex, a condition variable and the count of the threads
// still to arrive, parties - 1 when none waits ("start at -1", then one per thread).
struct RtAppBarrier {
  std::unique_ptr<user::Mutex> m = std::make_unique<user::Mutex>();
  CondVar c;
  int waiting = 0;
};

struct TimerState {
  bool init = false;
  int64_t t_next = 0;
};

// Per task, over all its instances: the figures of rt-app's log lines.
struct TaskStats {
  std::vector<uint64_t> phase_runs;
  uint64_t loops = 0;  // phase runs: rt-app's log lines
  int64_t run_sum_ns = 0, run_max_ns = 0;
  int64_t slack_sum_ns = 0, slack_min_ns = INT64_MAX;
  int64_t wu_sum_ns = 0, wu_max_ns = 0;
  uint64_t timer_events = 0, overruns = 0;
  uint64_t bad_unlocks = 0;  // unlock (or wait) on a mutex the thread does not hold
};

struct Shared {
  RtAppDesc d;
  std::vector<std::unique_ptr<user::Mutex>> mutexes;
  std::vector<CondVar> conds;
  std::vector<RtAppBarrier> barriers;
  std::vector<TimerState> timers;  // shared timers (a "unique" one's slot is unused)
  std::vector<TaskStats> stats;
  std::unique_ptr<user::Barrier> start;  // every thread of the run
  int64_t t_zero = 0;                    // thread 0's clock before the start barrier
  int64_t mem_bytes_per_us = 0, iorun_bytes_per_us = 0;
};

struct ThreadCtx {
  int task = 0;
  int ind = 0;  // rt-app's thread index
  std::vector<TimerState> unique_timers;  // this thread's "unique" timers
  std::vector<char> held;                 // mutexes this thread holds
};

// pthread_mutex_unlock() of a mutex the thread does not hold is undefined: not done, counted.
user::Task<> unlock_if_held(user::Thread& t, Shared* s, ThreadCtx* c, int m) {
  if (!c->held[m]) {
    s->stats[c->task].bad_unlocks++;
    co_return;
  }
  c->held[m] = 0;
  co_await s->mutexes[m]->unlock(t);
}

user::Task<> lock(user::Thread& t, Shared* s, ThreadCtx* c, int m) {
  co_await s->mutexes[m]->lock(t);
  c->held[m] = 1;
}

// pthread_cond_wait(): release the mutex, sleep until signalled, take the mutex again.
user::Task<> cond_wait(user::Thread& t, Shared* s, ThreadCtx* c, CondVar* cv, int m) {
  const int64_t v = t.load(&cv->seq);
  cv->waiters++;
  co_await unlock_if_held(t, s, c, m);
  co_await t.futex_wait(&cv->seq, v);
  cv->waiters--;
  co_await lock(t, s, c, m);
}

user::Task<> cond_wake(user::Thread& t, CondVar* cv, int64_t n) {
  if (cv->waiters == 0) co_return;
  t.fetch_add(&cv->seq, 1);
  co_await t.futex_wake(&cv->seq, n);
}

// rt-app's rtapp_barrier: the last thread to arrive broadcasts under the mutex; each woken
// one takes the mutex in turn, counts itself back and lets it go.
user::Task<> barrier(user::Thread& t, RtAppBarrier* b) {
  co_await b->m->lock(t);
  if (b->waiting == 0) {
    if (b->c.waiters > 0) {
      t.fetch_add(&b->c.seq, 1);
      co_await t.futex_wake(&b->c.seq, INT32_MAX);
    }
  } else {
    b->waiting--;
    const int64_t v = t.load(&b->c.seq);
    b->c.waiters++;
    co_await b->m->unlock(t);
    co_await t.futex_wait(&b->c.seq, v);
    b->c.waiters--;
    co_await b->m->lock(t);
    b->waiting++;
  }
  co_await b->m->unlock(t);
}

user::Program rt_app_thread(user::Thread& t, Shared* s, ThreadCtx* c) {
  const RtAppTask& task = s->d.tasks[c->task];
  TaskStats& st = s->stats[c->task];
  // rt-app's threads_barrier: each thread, created with its policy and affinity, waits for
  // the others to exist; then all start at once. Thread 0 reads the time base first.
  if (c->ind == 0) s->t_zero = t.now();
  co_await s->start->arrive_and_wait(t);
  // rt-app's t_first: where every timer's first period starts, t_zero plus the task's delay,
  // slept to with clock_nanosleep(TIMER_ABSTIME).
  int64_t t_first = s->t_zero;
  if (task.delay_us > 0) {
    t_first += task.delay_us * 1000;
    co_await t.sleep_until(t_first);
  }
  for (int64_t loop = 0; task.loop < 0 || loop < task.loop; ++loop) {
    bool ran = false;
    for (size_t pi = 0; pi < task.phases.size(); ++pi) {
      const RtAppPhase& ph = task.phases[pi];
      for (int64_t pl = 0; ph.loop < 0 || pl < ph.loop; ++pl) {
        ran = true;
        const int64_t begin = t.now();
        int64_t run_ns = 0, slack_ns = 0, wu_ns = 0;
        for (const RtAppEvent& ev : ph.events) {
          switch (ev.kind) {
            case RtAppEvent::Run: {
              const int64_t t0 = t.now();
              co_await t.compute(ev.value * 1000);
              run_ns += t.now() - t0;
              break;
            }
            case RtAppEvent::Runtime: {  // loadwait(32) until the wall time has passed
              const int64_t t0 = t.now();
              do {
                co_await t.compute(32 * 1000);
              } while ((t.now() - t0) / 1000 < ev.value);
              run_ns += t.now() - t0;
              break;
            }
            case RtAppEvent::Sleep:
              co_await t.nanosleep(ev.value * 1000);
              break;
            case RtAppEvent::Mem: {
              const int64_t ns = ev.value * 1000 / s->mem_bytes_per_us;
              co_await t.compute(ns);
              break;
            }
            case RtAppEvent::Iorun: {
              const int64_t ns = ev.value * 1000 / s->iorun_bytes_per_us;
              co_await t.compute(ns);
              break;
            }
            case RtAppEvent::Timer: {
              // rt-app's run_event(), rtapp_timer: the next expiry is one period after the
              // previous one; if it has passed, no sleep, and a relative timer restarts from now.
              const RtAppTimer& td = s->d.timers[ev.res];
              TimerState& ts = td.unique ? c->unique_timers[ev.res] : s->timers[ev.res];
              if (!ts.init) {
                ts.init = true;
                ts.t_next = t_first;
              }
              ts.t_next += ev.value * 1000;
              const int64_t slack = ts.t_next - t.now();
              slack_ns = s->d.cumulative_slack ? slack_ns + slack : slack;
              st.timer_events++;
              if (slack > 0) {
                const int64_t due = ts.t_next;
                co_await t.sleep_until(due);
                wu_ns += t.now() - due;
              } else {
                st.overruns++;
                if (td.relative) ts.t_next = t.now();
                wu_ns = 0;  // rt-app: ldata->wu_latency = 0
              }
              break;
            }
            case RtAppEvent::Lock:
              co_await lock(t, s, c, ev.res);
              break;
            case RtAppEvent::Unlock:
              co_await unlock_if_held(t, s, c, ev.res);
              break;
            case RtAppEvent::Wait:
              co_await cond_wait(t, s, c, &s->conds[ev.res], ev.mutex);
              break;
            case RtAppEvent::Signal:
              co_await cond_wake(t, &s->conds[ev.res], 1);
              break;
            case RtAppEvent::Broad:
              co_await cond_wake(t, &s->conds[ev.res], INT32_MAX);
              break;
            case RtAppEvent::Sync:  // rtapp_sig_and_wait: signal, then wait (mutex held)
              co_await cond_wake(t, &s->conds[ev.res], 1);
              co_await cond_wait(t, s, c, &s->conds[ev.res], ev.mutex);
              break;
            case RtAppEvent::Suspend:  // rt-app's rtapp_suspend
              co_await lock(t, s, c, ev.mutex);
              co_await cond_wait(t, s, c, &s->conds[ev.res], ev.mutex);
              co_await unlock_if_held(t, s, c, ev.mutex);
              break;
            case RtAppEvent::Resume:  // rt-app's rtapp_resume
              co_await lock(t, s, c, ev.mutex);
              co_await cond_wake(t, &s->conds[ev.res], INT32_MAX);
              co_await unlock_if_held(t, s, c, ev.mutex);
              break;
            case RtAppEvent::Barrier:
              co_await barrier(t, &s->barriers[ev.res]);
              break;
            case RtAppEvent::Yield:
              co_await t.sched_yield();
              break;
          }
        }
        st.phase_runs[pi]++;
        st.loops++;
        st.run_sum_ns += run_ns;
        st.run_max_ns = std::max(st.run_max_ns, run_ns);
        st.slack_sum_ns += slack_ns;
        st.slack_min_ns = std::min(st.slack_min_ns, slack_ns);
        st.wu_sum_ns += wu_ns;
        st.wu_max_ns = std::max(st.wu_max_ns, wu_ns);
        // A phase of events that take no time (only yields, unblocked locks, run 0) would
        // loop at one instant forever; rt-app's own bookkeeping of a loop (clock reads, its
        // log line) takes about a microsecond, charged here in that case only.
        if (t.now() == begin) co_await t.compute(1000);
      }
    }
    if (!ran) break;  // every phase has loop 0: nothing to repeat
  }
}

class RtApp : public Workload {
 public:
  std::string setup(kernel::Kernel& k, const Params& p, uint64_t seed) override {
    const std::string file = p.get("file");
    s_.mem_bytes_per_us = p.get_int_in("mem_bytes_per_us", 1, INT32_MAX);
    s_.iorun_bytes_per_us = p.get_int_in("iorun_bytes_per_us", 1, INT32_MAX);
    if (!p.error().empty()) return p.error();
    if (file.empty()) return "file: an rt-app JSON file is required (schedlab run FILE.json)";
    if (std::string e = load_rt_app_file(file, &s_.d); !e.empty()) return e;
    const RtAppDesc& d = s_.d;
    for (size_t i = 0; i < d.mutexes.size(); ++i) s_.mutexes.push_back(std::make_unique<user::Mutex>());
    s_.conds.resize(d.conds.size());
    s_.barriers.resize(d.barrier_parties.size());
    for (size_t b = 0; b < d.barrier_parties.size(); ++b)
      s_.barriers[b].waiting = d.barrier_parties[b] - 1;
    s_.timers.resize(d.timers.size());
    s_.stats.resize(d.tasks.size());
    int64_t threads = 0;
    for (const RtAppTask& t : d.tasks) threads += t.instance;
    if (threads > kMaxThreads)
      return "file: " + std::to_string(threads) + " threads in '" + file + "', more than " + std::to_string(kMaxThreads);
    s_.start = std::make_unique<user::Barrier>(static_cast<int>(threads));
    tgid_ = k.create_process("rt-app");
    for (size_t ti = 0; ti < d.tasks.size(); ++ti) {
      const RtAppTask& task = d.tasks[ti];
      s_.stats[ti].phase_runs.assign(task.phases.size(), 0);
      kernel::TaskAttr attr;
      attr.comm = task.name.substr(0, 15);  // TASK_COMM_LEN - 1
      if (task.policy == "SCHED_FIFO" || task.policy == "SCHED_RR") {
        attr.policy = task.policy == "SCHED_FIFO" ? SCHED_FIFO : SCHED_RR;
        attr.rt_priority = task.priority;
      } else {
        attr.policy = task.policy == "SCHED_IDLE" ? SCHED_IDLE : SCHED_NORMAL;
        attr.nice = task.priority;
      }
      for (int cpu : task.cpus)
        if (cpu >= k.nr_cpus())
          return "tasks." + task.name + ".cpus: CPU " + std::to_string(cpu) + " is not on this machine (" +
                 std::to_string(k.nr_cpus()) + " CPUs)";
      attr.cpus = task.cpus;
      if (std::string e = k.validate_attr(attr); !e.empty()) return "tasks." + task.name + ": " + e;
      for (int i = 0; i < task.instance; ++i) {
        auto c = std::make_unique<ThreadCtx>();
        c->task = static_cast<int>(ti);
        c->ind = static_cast<int>(ctx_.size());
        c->unique_timers.resize(d.timers.size());
        c->held.assign(d.mutexes.size(), 0);
        auto th = std::make_unique<user::Thread>(&k, sim::Rng(seed, static_cast<uint64_t>(ctx_.size())));
        th->start(rt_app_thread(*th, &s_, c.get()));
        ctx_.push_back(std::move(c));
        k.create_thread(tgid_, attr, std::move(th));
      }
    }
    return "";
  }

  void report(const kernel::KernelStats&, sim::Time, report::Results* r) override {
    auto us = [](double ns) { return ns / 1000.0; };
    for (size_t ti = 0; ti < s_.d.tasks.size(); ++ti) {
      const RtAppTask& task = s_.d.tasks[ti];
      const TaskStats& st = s_.stats[ti];
      const std::string n = "rt_app_" + rt_app_metric_name(task.name);
      const double lines = static_cast<double>(st.loops);
      r->metrics.push_back({n + "_loops", lines, "runs", "phase runs of " + task.name + " (rt-app's log lines), all instances"});
      for (size_t pi = 0; pi < task.phases.size(); ++pi)
        r->metrics.push_back({n + "_" + rt_app_metric_name(task.phases[pi].name) + "_runs",
                              static_cast<double>(st.phase_runs[pi]), "runs",
                              "runs of phase " + task.phases[pi].name + " of " + task.name});
      if (st.loops == 0) continue;
      r->metrics.push_back({n + "_run_mean_us", us(static_cast<double>(st.run_sum_ns) / lines), "us",
                            "time in run events per phase run (rt-app's run column), mean"});
      r->metrics.push_back({n + "_run_max_us", us(static_cast<double>(st.run_max_ns)), "us",
                            "time in run events per phase run, max"});
      if (st.timer_events == 0) continue;
      r->metrics.push_back({n + "_slack_mean_us", us(static_cast<double>(st.slack_sum_ns) / lines), "us",
                            "timer slack per phase run (rt-app's slack column), mean"});
      r->metrics.push_back({n + "_slack_min_us", us(static_cast<double>(st.slack_min_ns)), "us",
                            "timer slack per phase run, min (negative: the period overran)"});
      r->metrics.push_back({n + "_wu_lat_mean_us", us(static_cast<double>(st.wu_sum_ns) / lines), "us",
                            "wake-up latency after timers per phase run (rt-app's wu_lat column), mean"});
      r->metrics.push_back({n + "_wu_lat_max_us", us(static_cast<double>(st.wu_max_ns)), "us",
                            "wake-up latency after timers per phase run, max"});
      r->metrics.push_back({n + "_timer_overruns", static_cast<double>(st.overruns), "events",
                            "timer events whose expiry had passed (no sleep)"});
    }
    for (size_t ti = 0; ti < s_.d.tasks.size(); ++ti)
      if (s_.stats[ti].bad_unlocks)
        r->notices.push_back("rt-app task " + s_.d.tasks[ti].name + ": " + std::to_string(s_.stats[ti].bad_unlocks) +
                             " unlock(s) of a mutex it did not hold, not done");
  }

 private:
  Shared s_;
  std::vector<std::unique_ptr<ThreadCtx>> ctx_;
  int tgid_ = 0;
};

}  // namespace

WorkloadInfo rt_app_workload() {
  return {"rt-app",
          "an rt-app JSON description (schedlab run FILE.json); per-task runs, run time, timer slack",
          {{"file", "", "the rt-app JSON file (given as the run's target: schedlab run FILE.json)"},
           {"mem_bytes_per_us", "10000", "speed of the mem event: bytes written per us of CPU"},
           {"iorun_bytes_per_us", "2000", "speed of the iorun event: bytes written to io_device per us of CPU"}},
          [] { return std::make_unique<RtApp>(); }};
}

}  // namespace workloads
