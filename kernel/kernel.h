// The simulated kernel of one run: per-CPU runqueues, tasks, timers and the syscall layer,
// driven by the engine. Workloads create processes and threads through the methods below;
// user programs reach it only through UserContext actions and the user_* memory methods.
#pragma once
#include <libdivide.h>

#include <memory>
#include <string>
#include <vector>

#include "hw/machine.h"
#include "kernel/config.h"
#include "kernel/sched/sched.h"
#include "kernel/uapi.h"
#include "sim/engine.h"

namespace kernel {

struct TaskAttr {
  std::string comm = "task";
  int policy = SCHED_NORMAL;
  int nice = 0;            // fair policies: -20..19
  int rt_priority = 0;     // SCHED_FIFO/RR: 1..99
  std::vector<int> cpus;   // allowed CPUs; empty = all
  int64_t slice_ns = 0;    // fair: sched_attr.sched_runtime, a custom slice (0 = the sysctl)
  // Already there when the scenario starts (a kernel thread, a daemon): not forked by the
  // launcher (so it does not delay the forks) but asleep on its first allowed CPU,
  // with no load left, until a timer wakes it at its start time; its program then begins.
  bool preexisting = false;
  // The latency_sensi_flag patch's per-task flag, set from the start (as a sched_setattr()
  // with SCHED_FLAG_LATENCY_SENSITIVE would); needs a kernel carrying the patch.
  bool latency_sensitive = false;
  // The task group the thread runs in (Kernel::create_task_group()); 0 = the root group.
  int group = 0;
};

// Errors the kernel reports for one run (invariant violations the model survived).
struct Warnings {
  uint64_t count = 0;
  std::string first;
};

class Kernel {
 public:
  Kernel(sim::Engine* engine, const hw::Machine& machine, const KernelConfig& cfg);
  ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  // Creates an empty process (an mm) and returns its tgid.
  int create_process(const std::string& name);
  // Creates a thread of process `tgid` running `prog`. One parent, the launcher (a task of
  // its own process "launcher", started when the first thread is created; see
  // kernel/fork.cc), forks every thread in the order of these calls, as a loop of
  // pthread_create() would: each at `start` or when the launcher is done with the previous
  // clone() (machine().costs.clone_ns of its CPU time), whichever is later, placed by
  // wake_up_new_task() from the launcher's CPU. Preexisting threads are not forked (see
  // TaskAttr). A thread created later wakes the launcher to fork it. Returns its pid.
  // REQUIRES: attr already validated (see validate_attr).
  int create_thread(int tgid, const TaskAttr& attr, std::unique_ptr<UserContext> prog,
                    sim::Time start = 0);
  // "" if attr is acceptable on this machine, else a one-line error naming the field.
  std::string validate_attr(const TaskAttr& attr) const;

  // Task groups (CONFIG_FAIR_GROUP_SCHED). Creates a group named `path` below group
  // `parent` (0 = the root group, else an id returned before) and returns its id (>= 1).
  int create_task_group(const std::string& path, int parent = 0);
  // tg->shares of group `id`: its weight against its siblings (1024 = nice 0 = cpu.weight
  // 100), MIN_SHARES..MAX_SHARES; the group's entities are re-weighed at once.
  void set_task_group_shares(int id, unsigned long shares);
  // The group at cgroup path `path` ("/a/b"), created with its missing ancestors; its id.
  int task_group_at(const std::string& path);
  // Threads created with TaskAttr::group 0 go to group `id` (0 = the root group) from now on.
  void use_task_group(int id) { current_group_ = id; }
  // What each group's tasks and its descendants' ran (cpu.stat usage), in creation order.
  struct TaskGroupStats {
    int id = 0;
    std::string path;
    uint64_t usage_ns = 0;
  };
  std::vector<TaskGroupStats> task_group_stats() const;
  // Sessions and autogroup (kernel/sched/autogroup.cc). Processes are created in the current
  // session: 0, the scenario's, until setsid() starts a new one (returned) for the processes
  // created after it; use_session() goes back to one.
  int setsid();
  void use_session(int sid) { current_session_ = sid; }
  int session_of(int tgid) const;
  // The session's autogroup nice (-20..19): its group's shares as a task of that nice.
  void set_autogroup_nice(int sid, int nice);

  // Starts the periodic ticks; call once before the engine runs.
  void start();
  // Closes the accounting at `end` (the engine's clock must read `end`).
  void finish(sim::Time end);

  // User memory, called by the running program (current task, current CPU, now).
  int64_t user_load(const UserWord* w) const { return w->value; }
  void user_store(UserWord* w, int64_t v);
  // Returns true and stores `desired` iff the word held `expected`.
  bool user_cmpxchg(UserWord* w, int64_t expected, int64_t desired);
  int64_t user_fetch_add(UserWord* w, int64_t delta);

  sim::Time now() const { return engine_->now(); }
  // The task that forks the threads, or null before the first one is created.
  const task_struct* launcher() const { return launcher_; }
  int nr_cpus() const { return static_cast<int>(rqs_.size()); }
  const hw::Machine& machine() const { return machine_; }
  const KernelConfig& config() const { return cfg_; }
  const std::vector<std::unique_ptr<task_struct>>& tasks() const { return tasks_; }
  const rq& cpu_rq(int cpu) const { return *rqs_[cpu]; }
  const Warnings& warnings() const { return warnings_; }
  const std::string& process_name(int tgid) const;

  // ---- Kernel-internal state and helpers, used by kernel/ only. ----
  rq* rq_of(int cpu) { return rqs_[cpu].get(); }
  sim::Engine* engine() { return engine_; }
  void warn_once(const std::string& what);
  u64 jiffies() const { return static_cast<u64>(engine_->now() / cfg_.tick_nsec()); }
  task_struct* current_task() { return current_; }
  int current_cpu() const { return current_cpu_; }
  void set_current(task_struct* p, int cpu) { current_ = p; current_cpu_ = cpu; }

  hw::Machine machine_;
  KernelConfig cfg_;
  u64 base_slice_ns = 0;       // sysctl_sched_base_slice, scaled for nr_cpus
  unsigned nr_overloaded = 0;  // CPUs with nr_running >= 2 (root domain "overload")
  unsigned rto_count = 0;      // CPUs with pushable RT tasks (root domain rto_count)
  int rto_cpu = -1;            // RT_PUSH_IPI: where the push chain is, -1 when idle
  unsigned rto_loop = 0, rto_loop_next = 0;  // a pull during a chain asks for one more loop
  u64 nohz_next_balance = 0;   // jiffies
  u64 nohz_next_blocked = 0;   // jiffies: next NOHZ_STATS_KICK
  u64 cfs_tasks_clock = 0;     // stamps sched_entity::cfs_tasks_seq
  unsigned nohz_flags = 0;     // NOHZ_*_KICK asked of the idle balancer
  bool nohz_has_blocked = false;  // idle CPUs may hold blocked load to decay (nohz.has_blocked)
  int nr_idle_cpus = 0;
  const struct slice_ext_ops* slice_ops = nullptr;  // selected once from cfg_.slice_ext.abi
  const struct mm_cid_ops* mm_cid_ops = nullptr;    // selected once from cfg_.mm_cid
  const struct softirq_ops* softirq_ops = nullptr;  // selected once from cfg_.softirq
  sim::Rng rng;                                     // the kernel's own draws (rseq_miss)
  sim::UniformInt timer_irq_jitter;                 // uniform(0, costs.timer_irq_jitter_ns)
  // Divides by costs.smt_slowdown_permille without a 64-bit divide: settle_user() converts
  // wall time to work on nearly every event.
  libdivide::divider<uint64_t> smt_slowdown_div;
  // machine_.line_transfer_ns() from one packed entry per CPU (three vector reads each
  // otherwise), and the spinners' reload jitter uniform(0, lat/2) for each distance as a
  // sim::UniformInt (no 64-bit divide per draw): both run for every spinner on every
  // change of a spun-on word.
  std::vector<hw::CpuPlace> cpu_places;
  sim::Time line_ns[hw::kLineDistances] = {};       // costs.line_ns() by hw::line_distance()
  sim::UniformInt spin_jitter[hw::kLineDistances];  // uniform(0, line_ns[d] / 2)
  int line_distance(int a, int b) const {
    return hw::line_distance(a, b, cpu_places[static_cast<size_t>(a)], cpu_places[static_cast<size_t>(b)]);
  }
  sim::Time line_transfer_ns(int a, int b) const { return line_ns[line_distance(a, b)]; }
  std::vector<std::unique_ptr<struct mm_struct>> mms;
  std::vector<std::unique_ptr<task_group>> task_groups;  // ids 1.., parents before children
  std::vector<task_struct*> balance_scratch;        // detach_tasks() candidates
  // Per CPU, what load balancing and idle-CPU searches read of every CPU of a domain, again
  // and packed (simulator-only): update_sg_lb_stats() and available_idle_cpu() loop over up
  // to all CPUs, and 16 bytes per CPU instead of two or three lines of each rq make those
  // loops several times faster on wide machines. Written by lb_view_update() where the rq
  // fields change: add/sub_nr_running, enqueue/dequeue_entity, __schedule, the wake list.
  std::vector<lb_cpu> lb_view;
  // lb_view summed per CPU, core, LLC and socket (the sched groups of every level), and per
  // CPU the four sums it counts in. Sized once by build_sched_domains().
  std::vector<lb_sum> lb_sums[4];
  std::vector<std::array<lb_sum*, 4>> lb_sums_of;
  std::vector<int> llc_nr_idle_scan;  // per LLC: sd_llc_shared->nr_idle_scan (SIS_UTIL)
  std::vector<int> all_cpus;          // 0..nr_cpus-1 (cpu_online_mask)
  // Per CPU: the last CPU cpumask_any_and_distribute() chose there (RT placement).
  std::vector<int> distribute_cpu_mask_prev;
  struct mm_struct* mm_of(int tgid);
  // Threads the launcher forks, in order (kernel/fork.cc).
  struct PendingFork {
    task_struct* p;
    sim::Time start;
  };
  std::vector<PendingFork> pending_forks;
  // Test hook: makes task_getshared() see a pending fatal signal (-EINTR).
  void TEST_set_fatal_signal(int pid);
  // Ends a process: its threads must all have exited; frees its [task_shared] pages.
  void exit_mm(int tgid);

 private:
  sim::Engine* engine_;
  std::vector<std::unique_ptr<rq>> rqs_;
  bool has_threads(int tgid) const;
  int current_session_ = 0, last_session_ = 0;
  int current_group_ = 0;
  std::vector<std::pair<int, int>> process_sessions_;  // (tgid, session); -1 = init's
  std::vector<std::pair<int, int>> autogroups_;        // (session, task group id)
  int autogroup_of_session(int sid);
  task_group* autogroup_task_group(int tgid);

  std::vector<std::unique_ptr<task_struct>> tasks_;
  std::vector<std::unique_ptr<task_struct>> idle_tasks_;
  std::vector<std::pair<int, std::string>> process_names_;
  std::vector<std::unique_ptr<UserContext>> programs_;
  task_struct* launcher_ = nullptr;
  // launcher=outside: one timer per thread, and when the parent may fork again.
  std::vector<std::unique_ptr<sim::Timer>> start_timers_;
  sim::Time next_fork_ = 0;
  sim::Timer launcher_start_;
  sim::Timer launcher_wake_;  // a thread created after the launcher went to wait
  // A task_struct for a new thread of `tgid`, on its first allowed CPU, not yet queued.
  std::unique_ptr<task_struct> alloc_task(int tgid, const TaskAttr& attr);
  static void fork_from_outside(sim::Timer* t, sim::Time now);
  // Has the launcher fork p at `start` (kernel/fork.cc); creates the launcher first.
  void queue_fork(task_struct* p, sim::Time start);
  int next_pid_ = 1;
  task_struct* current_ = nullptr;
  int current_cpu_ = -1;
  Warnings warnings_;
};

}  // namespace kernel
