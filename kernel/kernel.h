// The simulated kernel of one run, as the layers above see it: build it for a machine and a
// configuration, create processes and threads, run it on the engine, read a stats snapshot.
// Nothing of task_struct, runqueues or sched entities: those live in kernel/kernel_impl.h.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "hw/machine.h"
#include "kernel/config.h"
#include "kernel/net.h"
#include "kernel/stats.h"
#include "kernel/trace.h"
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

class Kernel {
 public:
  // Boots a kernel for `machine` with `cfg` on `engine` (which must outlive it).
  static std::unique_ptr<Kernel> create(sim::Engine* engine, const hw::Machine& machine,
                                        const KernelConfig& cfg);
  virtual ~Kernel();
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
  // 100), MIN_SHARES..MAX_SHARES; the group's entities are re-weighed at once. Refused
  // (ignored) for an idle group, as Linux's sched_group_set_shares() returns -EINVAL.
  void set_task_group_shares(int id, unsigned long shares);
  // cpu.max of group `id` (CONFIG_CFS_BANDWIDTH): `quota_us` of CPU time per `period_us`
  // (quota_us < 0: "max", no limit). REQUIRES: 1000 <= period_us <= 1000000 and, with a
  // quota, 1000 <= quota_us <= kMaxCfsQuotaUs (tg_set_cfs_bandwidth()'s limits).
  static constexpr int64_t kMaxCfsQuotaUs = (1ll << 44) - 1;  // max_cfs_runtime: MAX_BW us
  void set_task_group_cpu_max(int id, int64_t quota_us, int64_t period_us);
  // cpu.max.burst of group `id`: runtime unused in earlier periods that a period may use
  // beyond its quota (the pool holds up to quota + burst). REQUIRES: 0 <= burst_us <= the
  // quota (any, when cpu.max is "max").
  void set_task_group_cpu_max_burst(int id, int64_t burst_us);
  // cgroup v2 cpu.weight.nice (-20..19) of group `id`: its shares are a task's weight at
  // that nice (cpu_weight_nice_write_s64()).
  void set_task_group_weight_nice(int id, int nice);
  // cgroup v2 cpu.idle (0 or 1) of group `id`: its entities become idle entities (a
  // non-idle wakee preempts them, they never preempt a non-idle entity) with WEIGHT_IDLEPRIO
  // shares; back to NICE_0_LOAD shares with 0.
  void set_task_group_idle(int id, int idle);
  // cgroup v2 cpuset.cpus of group `id` (existing CPUs, at least one): the threads created in
  // it or below it afterwards run only on its effective CPUs (within its parent's).
  void set_task_group_cpus(int id, const std::vector<int>& cpus);
  // The group at cgroup path `path` ("/a/b"), created with its missing ancestors; its id.
  int task_group_at(const std::string& path);
  // Threads created with TaskAttr::group 0 go to group `id` (0 = the root group) from now on.
  void use_task_group(int id);
  // Sessions and autogroup (kernel/sched/autogroup.cc). Processes are created in the current
  // session: 0, the scenario's, until setsid() starts a new one (returned) for the processes
  // created after it; use_session() goes back to one.
  int setsid();
  void use_session(int sid);
  int current_session() const;  // the session processes are created in
  int session_of(int tgid) const;
  // The session's autogroup nice (-20..19): its group's shares as a task of that nice.
  void set_autogroup_nice(int sid, int nice);

  // cpu_latency_qos_add_request(), what a write to /dev/cpu_dma_latency asks for as long as
  // the file stays open (here: the whole run): the cpuidle governor picks no state whose
  // exit latency exceeds `latency_us` (0: poll_idle(), the tick kept). The lowest request
  // of the run holds (pm_qos's minimum).
  void cpu_latency_qos_add_request(int32_t latency_us);

  // Adds a NIC with one receive queue (kernel/net/): its flows' packets arrive from the
  // start of the run. Returns its index in KernelStats::netdevs. REQUIRES: validated.
  int add_netdev(const NicRxQueueAttr& attr);
  // "" if attr fits this kernel and machine, else one line naming the bad field and value.
  std::string validate_netdev(const NicRxQueueAttr& attr) const;
  // Adds a bound UDP socket (kernel/net/sock.cc) that flows deliver to (NetFlowAttr::sock)
  // and threads read with recvmsg(). Returns its index, also in KernelStats::sockets.
  // REQUIRES: validated.
  int add_udp_socket(const UdpSockAttr& attr);
  std::string validate_udp_socket(const UdpSockAttr& attr) const;

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
  int nr_cpus() const { return machine_.topo.nr_cpus; }
  const hw::Machine& machine() const { return machine_; }
  const KernelConfig& config() const { return cfg_; }
  const std::string& process_name(int tgid) const;

  // What /proc/<pid>/sched, /proc/stat, schedstats and debugfs would show now; every
  // counter is summed here and nowhere else (kernel/stats.cc).
  KernelStats snapshot() const;

  // Tracing (kernel/trace.h): every tracepoint reports to `sink` (null: tracing off, the
  // default). The sink must outlive the run.
  void set_trace_sink(TraceSink* sink) { trace_sink_ = sink; }
  // trace_marker: the current task, running user code, opens a span called `name` (a string
  // with static storage), or closes its innermost open span (name == nullptr).
  void trace_user_span(const char* name) {
    if (trace_sink_) [[unlikely]] trace_user_span_slow(name);
  }

 protected:
  Kernel(sim::Engine* engine, const hw::Machine& machine, const KernelConfig& cfg)
      : engine_(engine), machine_(machine), cfg_(cfg) {}

  sim::Engine* engine_;
  hw::Machine machine_;
  KernelConfig cfg_;
  TraceSink* trace_sink_ = nullptr;

 private:
  void trace_user_span_slow(const char* name);  // kernel/trace.cc
};

}  // namespace kernel
