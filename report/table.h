// Plain-text rendering of one run's results: the compact report printed after a run, and a
// /proc/<pid>/sched-style dump of one task.
#pragma once
#include <climits>
#include <string>

#include "report/results.h"

namespace report {

struct TableOptions {
  bool per_cpu = false;   // a row per CPU, not only the aggregate and the extremes
  bool per_task = false;  // a row per task after the per-comm summary
  int max_tasks = INT_MAX;  // per-task rows shown before "... N more tasks" (run --limit)
  int max_comms = 10;     // per-comm rows shown before "... N more comms"
};

// The report: header (experiment), metrics, latency summaries (microseconds), CPU time
// split, tasks grouped by comm, then notices and warnings. Sections with no data are left
// out. The default output stays ~40 lines whatever the number of tasks or CPUs.
std::string render_table(const Results& r, const TableOptions& o = {});

// One task as Linux prints /proc/<pid>/sched (kernel/sched/debug.c, proc_sched_show_task):
// a "comm (pid, #threads: n)" line, a rule, then one "key : value" line per field, the key
// padded to 45 columns; times in milliseconds with 6 decimals, counts right-aligned in 21
// columns. Then every entry of t.extra as a count. The first form assumes 1 thread.
std::string render_proc_sched(const TaskResult& t);
std::string render_proc_sched(const TaskResult& t, int nr_threads);

// The number of tasks of r in thread group tgid (the "#threads" of render_proc_sched).
int nr_threads(const Results& r, int tgid);

// Linux's numeric policy (SCHED_NORMAL = 0, FIFO = 1, RR = 2, BATCH = 3, IDLE = 5) for a
// TaskResult::policy name, -1 if unknown; and the kernel prio (0-99 RT, 100-139 fair).
int linux_policy(const std::string& policy);
int linux_prio(const TaskResult& t);

}  // namespace report
