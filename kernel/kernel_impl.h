// The kernel's own view of itself (kernel-private: only kernel/ and its tests include this):
// per-CPU runqueues, tasks, timers and the state the scheduler classes share. The layers
// above see the narrow kernel::Kernel of kernel/kernel.h, which this implements.
#pragma once
#include <libdivide.h>

#include <memory>
#include <string>
#include <vector>

#include "hw/machine.h"
#include "kernel/config.h"
#include "kernel/cpuidle.h"
#include "kernel/kernel.h"
#include "kernel/sched/sched.h"
#include "kernel/time/hrtimer.h"
#include "kernel/uapi.h"
#include "sim/engine.h"

namespace kernel {

// The runqueues, every CPU's, in one block (Linux's per-CPU `runqueues`): rq_of() is an
// index, not a load of a pointer, and the block is backed by transparent huge pages where
// the host allows them (madvise), since on a wide machine nearly every event touches the rq
// of a CPU that no recent event touched, and with 4 KB pages each such rq costs a TLB miss.
class RqArray {
 public:
  RqArray() = default;
  RqArray(const RqArray&) = delete;
  RqArray& operator=(const RqArray&) = delete;
  ~RqArray();
  // Constructs n default rqs. REQUIRES: called once.
  void init(int n);
  int size() const { return n_; }
  rq* operator[](int cpu) const { return base_ + cpu; }
  rq* begin() const { return base_; }
  rq* end() const { return base_ + n_; }
  bool huge() const { return huge_; }  // the block is given to huge pages

 private:
  rq* base_ = nullptr;
  int n_ = 0;
  bool huge_ = false;
};

// The task_structs, idle tasks included, placed one after the other in blocks (Linux's
// task_struct slab cache), cache-line aligned: a tick on a wide machine reads the running
// task of a CPU no recent event touched, and tasks allocated one by one would be spread
// over the heap between the programs, names and masks created with them. The blocks grow
// from 64 tasks to 1024, then each is 2 MB, aligned and given to madvise(MADV_HUGEPAGE);
// on a machine whose rqs take huge pages (RqArray) every block is, so the tasks of a wide
// machine take a few huge pages instead of thousands of small ones. Memory goes back when
// the arena is destroyed.
class TaskArena {
 public:
  // Destroys the task; its memory stays in the arena.
  struct Destroy {
    void operator()(task_struct* p) const { p->~task_struct(); }
  };
  using Ptr = std::unique_ptr<task_struct, Destroy>;
  TaskArena() = default;
  TaskArena(const TaskArena&) = delete;
  TaskArena& operator=(const TaskArena&) = delete;
  ~TaskArena();
  // Every block a 2 MB huge page from the first. REQUIRES: before alloc().
  void init(bool huge) { huge_ = huge; }
  // A default-constructed task_struct.
  Ptr alloc();

 private:
  std::vector<void*> blocks_;
  task_struct* next_ = nullptr;
  task_struct* end_ = nullptr;
  size_t next_tasks_ = 64;  // tasks in the next block below the huge-page size
  bool huge_ = false;
};

class KernelImpl final : public Kernel {
 public:
  KernelImpl(sim::Engine* engine, const hw::Machine& machine, const KernelConfig& cfg);
  ~KernelImpl() override;

  using Kernel::cfg_;
  using Kernel::machine_;
  using Kernel::trace_sink_;  // the tracepoints' sink (kernel/trace_points.h), null when off
  // The task that forks the threads, or null before the first one is created.
  const task_struct* launcher() const { return launcher_; }
  int nr_cpus() const { return rqs_.size(); }
  const std::vector<TaskArena::Ptr>& tasks() const { return tasks_; }
  const rq& cpu_rq(int cpu) const { return *rqs_[cpu]; }
  const Warnings& warnings() const { return warnings_; }

  // Kernel's public methods (documented in kernel/kernel.h), which forward here.
  int create_process(const std::string& name);
  int create_thread(int tgid, const TaskAttr& attr, std::unique_ptr<UserContext> prog,
                    sim::Time start = 0);
  std::string validate_attr(const TaskAttr& attr) const;
  void start();
  void finish(sim::Time end);
  void user_store(UserWord* w, int64_t v);
  bool user_cmpxchg(UserWord* w, int64_t expected, int64_t desired);
  int64_t user_fetch_add(UserWord* w, int64_t delta);
  const std::string& process_name(int tgid) const;
  KernelStats snapshot() const;  // kernel/stats.cc
  int create_task_group(const std::string& path, int parent = 0);  // kernel/sched/fair_group.cc
  void set_task_group_shares(int id, unsigned long shares);
  void set_task_group_cpu_max(int id, int64_t quota_us, int64_t period_us);  // fair_bandwidth.cc
  void set_task_group_cpu_max_burst(int id, int64_t burst_us);              // fair_bandwidth.cc
  int task_group_at(const std::string& path);
  void use_task_group(int id) { current_group_ = id; }
  std::vector<TaskGroupStats> task_group_stats() const;
  // cgroup v2 cpu.idle and cpuset.cpus (kernel/cgroup.cc).
  task_group* task_group_by_id(int id);
  void set_task_group_weight_nice(int id, int nice);
  void set_task_group_idle(int id, int idle);
  void set_task_group_cpus(int id, const std::vector<int>& cpus);
  void update_effective_cpus();
  void restrict_to_cpuset(task_struct* p) const;
  int setsid();  // kernel/sched/autogroup.cc
  void use_session(int sid) { current_session_ = sid; }
  int current_session() const { return current_session_; }
  int session_of(int tgid) const;
  void set_autogroup_nice(int sid, int nice);

  rq* rq_of(int cpu) { return rqs_[cpu]; }
  sim::Engine* engine() { return engine_; }
  void warn_once(const std::string& what);
  // now / TICK_NSEC, exactly, by a multiply and shift (libdivide) instead of two 64-bit
  // divides (TICK_NSEC from HZ, then now by it): the newly-idle and periodic balancers read
  // jiffies on nearly every switch to idle and every tick. The engine's time is never negative.
  u64 jiffies() const { return static_cast<u64>(engine_->now()) / tick_nsec_div_; }
  task_struct* current_task() { return current_; }
  int current_cpu() const { return current_cpu_; }
  void set_current(task_struct* p, int cpu) { current_ = p; current_cpu_ = cpu; }

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
  // nohz.idle_cpus_mask: the idle CPUs whose tick is stopped, a bit per CPU (tick.cc keeps it).
  std::vector<bool> nohz_idle_mask;
  int nr_idle_cpus = 0;
  // A preemptible kernel section was charged in this run (cpu_charge_preemptible()): until
  // then the interrupt exit and the switch need not look for one.
  bool preemptible_sections = false;
  // cpu_latency_qos_limit(): the lowest /dev/cpu_dma_latency request, in ns (none: no limit,
  // PM_QOS_CPU_LATENCY_DEFAULT_VALUE).
  sim::Time cpu_latency_qos_ns = INT64_MAX;
  const struct slice_ext_ops* slice_ops = nullptr;  // selected once from cfg_.slice_ext.abi
  const struct mm_cid_ops* mm_cid_ops = nullptr;    // selected once from cfg_.mm_cid
  std::unique_ptr<struct mm_cid_metrics> mm_cid_metrics_;  // with mm_cid.sample_ms > 0 only
  const struct softirq_ops* softirq_ops = nullptr;  // selected once from cfg_.softirq
  int kthreadd_tgid = 0;                            // the kernel threads' process, once created
  std::unique_ptr<struct net_state> net;            // network devices (kernel/net/), if any
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
  // to all CPUs, and 32 bytes per CPU (two a line) instead of two or three lines of each rq
  // make those loops several times faster on wide machines. Written by lb_view_update()
  // where the rq fields change: add/sub_nr_running, enqueue/dequeue_entity, __schedule, the
  // wake list.
  std::vector<lb_cpu> lb_view;
  // lb_view summed per core, LLC and socket (the sched groups of every level above one CPU;
  // a one-CPU group reads its lb_view entry), and per CPU the three sums it counts in.
  // Indexed by level kind (1 core, 2 LLC, 3 socket; 0, the CPU, is left empty). Sized once
  // by build_sched_domains().
  std::vector<lb_sum> lb_sums[4];
  std::vector<std::array<lb_sum*, 3>> lb_sums_of;
  // Per level kind (core, LLC, socket, the machine) and id, its CPUs ascending: the storage
  // sched_domain::span and ::groups point into, one copy per span (build_sched_domains()).
  std::vector<std::vector<int>> sd_spans[4];
  std::vector<std::vector<int>> sd_group_parts;  // groups that are part of a child span only
  // The group lists sched_domain::groups, group_sum and group_cores point into, each distinct
  // list once: the CPUs of a span whose domains meet the groups in the same order (all the
  // CPUs of one child span, where levels nest) share it, as Linux's CPUs share the
  // sched_group ring, so a balance reads lists that other CPUs keep in the cache.
  struct sd_group_list {
    std::vector<std::span<const int>> groups;
    std::vector<const lb_sum*> sum;
    std::vector<int> cores;
  };
  std::vector<std::unique_ptr<sd_group_list>> sd_group_lists;
  std::vector<int> llc_nr_idle_scan;  // per LLC: sd_llc_shared->nr_idle_scan (SIS_UTIL)
  // Per LLC: sd_llc_shared->has_idle_cores, a hint (set_idle_cores(), test_idle_cores()).
  std::vector<uint8_t> llc_has_idle_cores;
  std::vector<int> all_cpus;          // 0..nr_cpus-1 (cpu_online_mask)
  std::vector<hrtimer_sleeper_base> hrtimer_bases;  // per CPU: its queued sleep timers
  std::vector<cpuidle_cpu> cpuidle;  // per CPU: the idle loop's tick flags, menu's history
  std::vector<sim::Timer> haltpoll_timers;  // per CPU with cpuidle_haltpoll: the poll window's end
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
  RqArray rqs_;
  bool has_threads(int tgid) const;
  int current_session_ = 0, last_session_ = 0;
  int current_group_ = 0;
  std::vector<std::pair<int, int>> process_sessions_;  // (tgid, session); -1 = init's
  std::vector<std::pair<int, int>> autogroups_;        // (session, task group id)
  int autogroup_of_session(int sid);
  task_group* autogroup_task_group(int tgid);

  // jiffies()'s divisor: cfg_.tick_nsec() (cfg_ is the base's, set before this).
  libdivide::divider<uint64_t> tick_nsec_div_{static_cast<uint64_t>(cfg_.tick_nsec())};
  TaskArena task_arena_;  // before the tasks: outlives them
  std::vector<TaskArena::Ptr> tasks_;
  std::vector<TaskArena::Ptr> idle_tasks_;
  std::vector<std::pair<int, std::string>> process_names_;
  std::vector<std::unique_ptr<UserContext>> programs_;
  task_struct* launcher_ = nullptr;
  // launcher=outside: one timer per thread, and when the parent may fork again.
  std::vector<std::unique_ptr<sim::Timer>> start_timers_;
  sim::Time next_fork_ = 0;
  sim::Timer launcher_start_;
  sim::Timer launcher_wake_;  // a thread created after the launcher went to wait
  // A task_struct for a new thread of `tgid`, on its first allowed CPU, not yet queued.
  TaskArena::Ptr alloc_task(int tgid, const TaskAttr& attr);
  static void fork_from_outside(sim::Timer* t, sim::Time now);
  // Has the launcher fork p at `start` (kernel/fork.cc); creates the launcher first.
  void queue_fork(task_struct* p, sim::Time start);
  int next_pid_ = 1;
  task_struct* current_ = nullptr;
  int current_cpu_ = -1;
  Warnings warnings_;
};

// The profile a path differs by (kernel/config.h, `kernel = 6.12 | 6.18 | 7.0`).
inline bool v612(const KernelImpl* k) { return k->cfg_.version == KernelVersion::V6_12; }
inline bool v70(const KernelImpl* k) { return k->cfg_.version == KernelVersion::V7_0; }

}  // namespace kernel
