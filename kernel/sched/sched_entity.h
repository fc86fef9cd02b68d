// The scheduling entities a task (or a task group, per CPU) carries, which Linux declares in
// include/linux/sched.h rather than kernel/sched/sched.h: its weight, its PELT signals, its
// fair (EEVDF) entity and its RT entity. The runqueues they are queued on are in sched.h.
#pragma once
#include <cstdint>

namespace kernel {

struct cfs_rq;
struct task_struct;

using u64 = uint64_t;
using s64 = int64_t;

inline constexpr unsigned long NICE_0_LOAD = 1024;  // scale_load_down()'d: see calc_delta_fair

struct load_weight {
  unsigned long weight = NICE_0_LOAD;
  uint32_t inv_weight = 4194304;  // sched_prio_to_wmult[]: 2^32 / weight
};

// struct sched_avg (include/linux/sched.h): PELT's load, runnable and utilisation signals of
// an entity or a runqueue, geometric sums with a 32 ms half-life. Maintained by pelt.cc and
// fair_pelt.cc's update_load_avg(); read by the load balancer and wake_affine.
struct sched_avg {
  u64 last_update_time = 0;   // of the sums, in PELT clock ns (a multiple of 1024 after a decay)
  u64 load_sum = 0;
  u64 runnable_sum = 0;
  uint32_t util_sum = 0;
  uint32_t period_contrib = 0;  // the part of the current 1024 us period already accumulated
  unsigned long load_avg = 0;
  unsigned long runnable_avg = 0;
  unsigned long util_avg = 0;
  unsigned util_est = 0;      // tasks: util_est EWMA (with UTIL_AVG_UNCHANGED); cfs_rq: the sum
};

// EEVDF entity. Virtual times in ns of virtual time; compared with signed wrap-around.
struct sched_entity {
  // The run-time accounting first, which every class's update_curr() and set_next_task()
  // use (RT and fair alike): in task_struct it shares prio's cache line (see there).
  u64 exec_start = 0;
  u64 sum_exec_runtime = 0;
  u64 prev_sum_exec_runtime = 0;
  load_weight load;
  u64 vruntime = 0;
  u64 deadline = 0;
  u64 vprot = 0;       // 6.18+: end of the protected (run-to-parity) window
  u64 slice = 0;
  s64 vlag = 0;        // 6.12 also uses vlag == deadline as the RUN_TO_PARITY marker
  bool on_rq = false;
  bool sched_delayed = false;
  bool rel_deadline = false;
  bool custom_slice = false;
  u64 tree_seq = 0;    // insertion order: the rb-tree puts equal deadlines later inserts right
  // The hierarchy (CONFIG_FAIR_GROUP_SCHED). A task's entity is queued on cfs_rq, the
  // runqueue of its group on its CPU, below the group's entity `parent`; a group entity owns
  // the runqueue my_q. Until task groups exist every task is in the root group: parent is
  // nullptr, cfs_rq is &rq->cfs and depth 0, so the loops over the hierarchy run once.
  sched_entity* parent = nullptr;
  struct cfs_rq* cfs_rq = nullptr;  // set by set_task_cpu()
  struct cfs_rq* my_q = nullptr;    // group entities only
  int depth = 0;
  task_struct* owner = nullptr;     // task_of(se), for task entities
  // Group entities: my_q's runnable tasks (se->runnable_weight, set by se_update_runnable()),
  // what PELT counts as the entity's runnable (se_runnable()).
  unsigned long runnable_weight = 0;
  sched_avg avg;                    // PELT
  // Place in rq->cfs_tasks, the balancer's list of the CPU's fair tasks, newest first: a
  // task goes to the head when enqueued there and when picked (a stamp stands in for the
  // list; detach_tasks() takes the lowest first, as Linux takes the tail).
  u64 cfs_tasks_seq = 0;
};

// sched_rt_entity::run_list: the task's links in its rq's rt_prio_array list of its priority,
// intrusive as Linux's list_head: queueing writes the tasks and the rq, no buffer apart.
struct rt_run_list {
  task_struct* next = nullptr;
  task_struct* prev = nullptr;
};

struct sched_rt_entity {
  rt_run_list run_list;  // valid while on_rq
  int time_slice = 0;  // RR ticks left
  bool on_rq = false;
  bool pushable = false;  // on rq->rt's pushable tasks: queued, not running, may migrate
};

}  // namespace kernel
