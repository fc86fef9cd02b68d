// rt-app workload descriptions: the JSON grammar of rt-app 1.0 (scheduler-tools/rt-app,
// doc/tutorial.txt; parsed as src/rt-app_parse_config.c does) read into a description the
// `rt-app` workload (workloads/rt_app.cc) runs. Every key is either modelled or refused with
// an error naming it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace workloads {

// One event of a phase, in the order of the file (rt-app matches an event key by its prefix:
// "run0", "run1" are both run events).
struct RtAppEvent {
  enum Kind { Run, Runtime, Sleep, Timer, Lock, Unlock, Wait, Signal, Broad, Sync, Barrier, Mem, Iorun, Yield, Suspend, Resume };
  Kind kind = Run;
  std::string key;     // as written, for messages
  int64_t value = 0;   // run/runtime/sleep/timer period: us; mem/iorun: bytes
  int res = -1;        // mutex (lock, unlock), condition (wait, signal, broad, sync, suspend,
                       // resume), barrier, timer: index into RtAppDesc's tables
  int mutex = -1;      // wait, sync: the mutex; suspend, resume: the mutex of the name
};

struct RtAppPhase {
  std::string name;    // the key in "phases"; "phase0" when the task has no "phases"
  int loop = 1;        // times the phase runs before the next one
  std::vector<RtAppEvent> events;
};

struct RtAppTask {
  std::string name;
  int instance = 1;
  int loop = -1;       // times the whole list of phases runs; -1 = until the end of the run
                       // (always, for a task without "phases": rt-app 1.0)
  std::string policy;  // SCHED_OTHER, SCHED_IDLE, SCHED_FIFO, SCHED_RR ("" = default_policy)
  int priority = 0;    // FIFO/RR: 1..99 (default 10); OTHER/IDLE: the nice value
  bool priority_set = false;
  std::vector<int> cpus;  // affinity; empty = all
  int64_t delay_us = 0;
  std::vector<RtAppPhase> phases;
};

struct RtAppTimer {
  std::string name;
  bool unique = false;    // "unique*" ref: one timer per thread, else shared by every user
  bool relative = true;   // "mode": "relative" (default) or "absolute"
};

struct RtAppDesc {
  int64_t duration_s = -1;       // global.duration; -1 = until every thread ends
  std::string default_policy = "SCHED_OTHER";
  int64_t calibration_ns_per_loop = 0;  // a number given; 0 = "CPUn" (calibrated by rt-app)
  int calibration_cpu = 0;
  bool cumulative_slack = false;
  int64_t mem_buffer_size = 4194304;
  std::vector<RtAppTask> tasks;
  std::vector<std::string> mutexes, conds, barriers;
  std::vector<int> barrier_parties;  // threads (instances) of the tasks that use each barrier
  std::vector<RtAppTimer> timers;
};

// Parses rt-app JSON text (comments and trailing commas allowed, as rt-app's json-c reader
// does). "" or a one-line error naming the key, prefixed with `where` (the file name).
std::string parse_rt_app(const std::string& text, const std::string& where, RtAppDesc* out);
// Reads and parses a file; errors name it.
std::string load_rt_app_file(const std::string& path, RtAppDesc* out);

// A task's name as a metric name part: letters, digits, '-' and '_' kept, others '_'.
std::string rt_app_metric_name(const std::string& task);

}  // namespace workloads
