// The kernel of one run: boot (runqueues, idle tasks, timers, domains), process and thread
// creation, user memory writes that spinners observe, and closing the accounting.
#include "kernel/kernel_impl.h"

#include <sys/mman.h>

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <new>

#include "kernel/cpu_exec.h"
#include "kernel/net/dev.h"
#include "kernel/net/nic.h"
#include "kernel/sched/deadline.h"
#include "kernel/slice_ext.h"
#include "kernel/softirq.h"
#include "kernel/task_shared.h"
#include "kernel/time/hrtimer.h"

namespace kernel {

namespace {
// Stream ids of the kernel's per-CPU draws: far from the workloads' (thread index) ones.
constexpr uint64_t kIrqStream = 0x697271ull << 32;  // "irq"
constexpr uint64_t kSchedRngStream = 0x726e64ull << 32;  // "rnd"
constexpr uint64_t kCfsPeriodStream = 0x636673ull << 32;  // "cfs"
}  // namespace

KernelImpl::KernelImpl(sim::Engine* engine, const hw::Machine& machine, const KernelConfig& cfg)
    : Kernel(engine, machine, cfg), rng(cfg.seed, 0x6b65726e656c) {
  slice_ops = slice_ext_select(cfg_.slice_ext.abi);
  mm_cid_ops = mm_cid_select(cfg_);
  smt_slowdown_div =
      libdivide::divider<uint64_t>(static_cast<uint64_t>(machine_.costs.smt_slowdown_permille));
  const int n = machine_.topo.nr_cpus;
  for (int c = 0; c < n; ++c) cpu_places.push_back(machine_.topo.place(c));
  const hw::Costs& costs = machine_.costs;
  for (int d = 0; d < hw::kLineDistances; ++d) {
    line_ns[d] = costs.line_ns(d);
    spin_jitter[d] = sim::UniformInt(0, line_ns[d] / 2);
  }
  timer_irq_jitter = sim::UniformInt(0, costs.timer_irq_jitter_ns);
  // sched_init_smp() -> update_sysctl(): LOG scaling, factor 1 + ilog2(min(ncpus, 8)).
  int factor = 1;
  const int cpus = std::min(n, 8);
  if (cfg_.tunable_scaling == 1) factor = 1 + (31 - __builtin_clz(static_cast<unsigned>(cpus)));
  if (cfg_.tunable_scaling == 2) factor = cpus;
  base_slice_ns = static_cast<u64>(cfg_.base_slice_ns) * static_cast<u64>(factor);
  rqs_.init(n);
  task_arena_.init(rqs_.huge());
  for (int cpu = 0; cpu < n; ++cpu) {
    struct rq* rq = rqs_[cpu];
    rq->cpu = cpu;
    rq->k = this;
    rq->cfs.rq = rq;
    rq->smt_sibling = machine_.topo.smt_sibling(cpu);
    TaskArena::Ptr idle = task_arena_.alloc();
    idle->kern = this;
    idle->pid = 0;
    idle->comm = "swapper/" + std::to_string(cpu);
    idle->is_idle = true;
    idle->sched_class = &idle_sched_class;
    idle->cpu = cpu;  // set_task_cpu(), before rq_of(cpu) exists
    idle->se.cfs_rq = &rq->cfs;
    idle->on_cpu = true;
    idle->prio = MAX_RT_PRIO + 40;
    idle->cpus_mask.assign(n, false);
    idle->cpus_mask.set(cpu);
    idle->nr_cpus_allowed = 1;
    idle->se.owner = idle.get();
    rq->idle = idle.get();
    rq->curr = idle.get();
    idle_tasks_.push_back(std::move(idle));
    cpu_exec& ex = rq->ex;
    ex.irq_rng = sim::Rng(cfg_.seed, kIrqStream + static_cast<uint64_t>(cpu));
    rq->sched_rnd_state = sim::Rng(cfg_.seed, kSchedRngStream + static_cast<uint64_t>(cpu));
    // sched_init(): avg_idle starts at twice the migration cost, the balance cost at it.
    rq->avg_idle = 2 * static_cast<u64>(cfg_.migration_cost_ns);
    rq->max_idle_balance_cost = static_cast<u64>(cfg_.migration_cost_ns);
    for (sim::Timer* t : {&ex.resume_timer, &ex.tick_timer, &ex.hrtick_timer, &ex.ipi_timer,
                          &ex.slice_timer}) {
      t->ctx = rq;
      t->arg = static_cast<uint32_t>(cpu);
    }
    ex.resume_timer.fn = cpu_resume_timer_fn;
    ex.tick_timer.fn = tick_sched_timer_fn;
    ex.ipi_timer.fn = ipi_timer_fn;
    ex.slice_timer.fn = slice_ext_timer_fn;
    ex.hrtick_timer.fn = hrtick_timer_fn;
    rq->fair_server.timer.fn = dl_server_timer_fn;
    rq->fair_server.timer.ctx = rq;
    rq->fair_server.timer.arg = static_cast<uint32_t>(cpu);
  }
  nr_idle_cpus = n;
  lb_view.assign(static_cast<size_t>(n), lb_cpu{});
  hrtimer_bases.resize(static_cast<size_t>(n));
  cpuidle.resize(static_cast<size_t>(n));
  // A machine idle at the start of a run has had its CPUs in the idle loop for long: with a
  // deep state, each sits in it (menu predicts a long idle from no history and no timer),
  // unless without NO_HZ_IDLE that state is longer than the tick, which then is the
  // prediction.
  if (machine_.costs.has_deep_idle() &&
      (cfg_.nohz_idle || machine_.costs.idle_deep_residency() <= cfg_.tick_nsec())) {
    for (cpuidle_cpu& c : cpuidle) {
      c.state = kIdleDeep;
      c.time_start = 0;
    }
  }
  // With haltpoll, halted, its polling window at zero (the long halt before the run would
  // have shrunk any); that halt is not measured, so it moves no window.
  if (machine_.costs.cpuidle_haltpoll) {
    haltpoll_timers.resize(static_cast<size_t>(n));
    for (int cpu = 0; cpu < n; ++cpu) {
      cpuidle[static_cast<size_t>(cpu)].state = kHaltpollHalt;
      sim::Timer& t = haltpoll_timers[static_cast<size_t>(cpu)];
      t.fn = haltpoll_timer_fn;
      t.ctx = rq_of(cpu);
      t.arg = static_cast<uint32_t>(cpu);
    }
  }
  nohz_idle_mask.assign(static_cast<size_t>(n), false);
  balance_scratch.reserve(256);
  build_sched_domains(this);
  softirq_ops = softirq_select(cfg_.softirq);
  if (cfg_.softirq.ksoftirqd) spawn_ksoftirqd(this);
}

KernelImpl::~KernelImpl() = default;

void RqArray::init(int n) {
  assert(!base_ && n > 0);
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t bytes = static_cast<size_t>(n) * sizeof(rq);
  // From one huge page of rqs on (about 560 CPUs), a whole number of them, aligned, so the
  // kernel may back the block with them; a smaller machine's rqs stay in the cache and TLB.
  const bool huge = bytes >= kHugePage;
  const size_t align = huge ? kHugePage : 64;
  const size_t size = (bytes + align - 1) / align * align;
  void* mem = std::aligned_alloc(align, size);
  if (!mem) throw std::bad_alloc();
  if (huge) madvise(mem, size, MADV_HUGEPAGE);  // a hint: without THP, plain pages
  huge_ = huge;
  base_ = static_cast<rq*>(mem);
  for (int i = 0; i < n; ++i) new (base_ + i) rq();
  n_ = n;
}

RqArray::~RqArray() {
  for (int i = n_ - 1; i >= 0; --i) base_[i].~rq();
  std::free(base_);
}

TaskArena::~TaskArena() {
  for (void* b : blocks_) std::free(b);
}

TaskArena::Ptr TaskArena::alloc() {
  if (next_ == end_) {
    constexpr size_t kHugePage = size_t{2} << 20;
    size_t bytes = next_tasks_ * sizeof(task_struct);
    size_t align = alignof(task_struct);
    if (huge_ || next_tasks_ > 1024) {
      bytes = kHugePage;
      align = kHugePage;
    } else {
      next_tasks_ *= 2;
    }
    void* mem = std::aligned_alloc(align, bytes);
    if (!mem) throw std::bad_alloc();
    if (align == kHugePage) madvise(mem, bytes, MADV_HUGEPAGE);  // a hint: without THP, plain pages
    blocks_.push_back(mem);
    next_ = static_cast<task_struct*>(mem);
    end_ = next_ + bytes / sizeof(task_struct);
  }
  return Ptr(new (next_++) task_struct());
}

int KernelImpl::create_process(const std::string& name) {
  const int tgid = next_pid_++;
  process_names_.emplace_back(tgid, name);
  // kthreadd and its kernel threads are in init's session, whose autogroup is the root.
  process_sessions_.emplace_back(tgid, name == "kthreadd" ? -1 : current_session_);
  auto mm = std::make_unique<mm_struct>();
  mm->tgid = tgid;
  mms.push_back(std::move(mm));
  return tgid;
}

std::string KernelImpl::validate_attr(const TaskAttr& attr) const {
  if (fair_policy(attr.policy)) {
    if (attr.nice < -20 || attr.nice > 19)
      return "nice must be in -20..19 (got " + std::to_string(attr.nice) + ")";
  } else if (rt_policy(attr.policy)) {
    if (attr.rt_priority < 1 || attr.rt_priority > 99)
      return "rt_priority must be in 1..99 (got " + std::to_string(attr.rt_priority) + ")";
  } else {
    return "policy " + std::to_string(attr.policy) + " is not supported";
  }
  if (attr.latency_sensitive && !cfg_.softirq.latency_sensi_flag)
    return "latency_sensitive: the kernel does not carry the latency_sensi_flag patch "
           "(set softirq.latency_sensi_flag=true)";
  for (int c : attr.cpus)
    if (c < 0 || c >= nr_cpus())
      return "cpus: CPU " + std::to_string(c) + " does not exist (the machine has " +
             std::to_string(nr_cpus()) + ")";
  if (attr.group < 0 || attr.group > static_cast<int>(task_groups.size()))
    return "group: no task group " + std::to_string(attr.group);
  return "";
}

int KernelImpl::create_task_group(const std::string& path, int parent) {
  assert(parent >= 0 && parent <= static_cast<int>(task_groups.size()));
  auto tg = std::make_unique<task_group>();
  tg->id = static_cast<int>(task_groups.size()) + 1;
  tg->path = path;
  // init_cfs_bandwidth(): the period timer's first expiry is a random offset below the
  // default period, so that the groups' periods interleave; its own stream per group, so
  // that creating a group moves no other draw.
  sim::Rng offset(cfg_.seed, kCfsPeriodStream + static_cast<uint64_t>(tg->id));
  cfs_bandwidth& b = tg->cfs_bandwidth;
  b.period_expires = static_cast<sim::Time>(offset.next_u64() % b.period);
  alloc_fair_sched_group(this, tg.get(), parent ? task_groups[static_cast<size_t>(parent - 1)].get() : nullptr);
  tg->effective_cpus = tg->parent ? tg->parent->effective_cpus : std::vector<uint8_t>(static_cast<size_t>(nr_cpus()), 1);
  online_fair_sched_group(this, tg.get());  // sched_online_group()
  task_groups.push_back(std::move(tg));
  return task_groups.back()->id;
}

int KernelImpl::task_group_at(const std::string& path) {
  int parent = 0;
  for (size_t at = 1; at <= path.size();) {
    size_t end = path.find('/', at);
    if (end == std::string::npos) end = path.size();
    if (end > at) {
      const std::string prefix = path.substr(0, end);
      int found = 0;
      for (const auto& tg : task_groups)
        if (tg->path == prefix) found = tg->id;
      parent = found ? found : create_task_group(prefix, parent);
    }
    at = end + 1;
  }
  return parent;
}

void KernelImpl::set_task_group_shares(int id, unsigned long shares) {
  task_group* tg = task_group_by_id(id);
  if (tg->idle) return;  // sched_group_set_shares(): -EINVAL for an idle group
  sched_group_set_shares(this, tg, std::clamp(shares, MIN_SHARES, MAX_SHARES));
}

std::vector<TaskGroupStats> KernelImpl::task_group_stats() const {
  std::vector<TaskGroupStats> out;
  for (const auto& tg : task_groups) {
    const cfs_bandwidth& b = tg->cfs_bandwidth;
    TaskGroupStats g;
    g.id = tg->id;
    g.path = tg->path;
    g.usage_ns = tg->usage_ns;
    g.quota_us = b.quota == RUNTIME_INF ? -1 : static_cast<int64_t>(b.quota / 1000);
    g.period_us = static_cast<int64_t>(b.period / 1000);
    g.nr_periods = b.nr_periods;
    g.nr_throttled = b.nr_throttled;
    g.throttled_ns = b.throttled_time;
    g.burst_us = static_cast<int64_t>(b.burst / 1000);
    g.nr_bursts = b.nr_burst;
    g.burst_ns = b.burst_time;
    g.shares = tg->shares;
    g.idle = tg->idle;
    for (size_t c = 0; c < tg->effective_cpus.size(); ++c)
      if (tg->effective_cpus[c]) g.effective_cpus.push_back(static_cast<int>(c));
    out.push_back(std::move(g));
  }
  // Children come after their parents: add each group's usage to its ancestors, last first.
  for (size_t i = task_groups.size(); i-- > 0;)
    for (const task_group* a = task_groups[i]->parent; a; a = a->parent)
      out[static_cast<size_t>(a->id - 1)].usage_ns += task_groups[i]->usage_ns;
  return out;
}

// A fork by a parent off the machine (the launcher's own start, and every thread under
// launcher=outside): wake_up_new_task() from p's CPU, as if the parent had run there.
void KernelImpl::fork_from_outside(sim::Timer* t, sim::Time) {
  task_struct* p = static_cast<task_struct*>(t->ctx);
  p->kern->set_current(nullptr, -1);
  wake_up_new_task(p->kern, p);
}

TaskArena::Ptr KernelImpl::alloc_task(int tgid, const TaskAttr& attr) {
  TaskArena::Ptr p = task_arena_.alloc();
  p->kern = this;
  p->pid = tgid == next_pid_ - 1 && !has_threads(tgid) ? tgid : next_pid_++;
  p->tgid = tgid;
  p->mm = mm_of(tgid);
  p->comm = attr.comm;
  p->policy = attr.policy;
  p->nice = fair_policy(attr.policy) ? attr.nice : 0;
  p->rt_priority = rt_policy(attr.policy) ? attr.rt_priority : 0;
  p->prio = rt_policy(attr.policy) ? MAX_RT_PRIO - 1 - attr.rt_priority : DEFAULT_PRIO + p->nice;
  p->sched_class = rt_policy(attr.policy) ? &rt_sched_class : &fair_sched_class;
  p->cpus_mask.assign(nr_cpus(), attr.cpus.empty());
  for (int c : attr.cpus) p->cpus_mask.set(c);
  p->nr_cpus_allowed = p->cpus_mask.weight();
  if (const int group = attr.group ? attr.group : current_group_)
    p->sched_task_group = task_groups[static_cast<size_t>(group - 1)].get();
  else
    p->sched_task_group = autogroup_task_group(tgid);
  restrict_to_cpuset(p.get());
  // Its first allowed CPU: the first CPU of its own mask, else the cpuset's first.
  int first = attr.cpus.empty() ? 0 : attr.cpus.front();
  if (!p->cpus_mask.test(first)) first = p->cpus_mask.first();
  __set_task_cpu(p.get(), first);
  p->__state = TASK_RUNNING;
  set_load_weight(p.get());
  p->se.owner = p.get();
  p->se.slice = base_slice_ns;
  init_entity_runnable_average(&p->se);  // __sched_fork()
  if (attr.slice_ns > 0 && fair_policy(attr.policy)) {
    // __setparam_fair(): a custom slice, clamped to 0.1 .. 100 ms.
    p->se.custom_slice = true;
    p->se.slice = static_cast<u64>(std::clamp<int64_t>(attr.slice_ns, 100000, 100000000));
  }
  p->rt.time_slice = std::max(1, cfg_.rr_timeslice_ms * cfg_.hz / 1000);
  p->latency_sensi_flag = attr.latency_sensitive;
  p->sleep_timer.fn = hrtimer_sleep_fn;
  p->sleep_timer.ctx = p.get();
  return p;
}

int KernelImpl::create_thread(int tgid, const TaskAttr& attr, std::unique_ptr<UserContext> prog,
                          sim::Time start) {
  assert(validate_attr(attr).empty());
  TaskArena::Ptr p = alloc_task(tgid, attr);
  p->user = prog.get();
  if (attr.preexisting) {
    // A long sleeper from before the run: asleep on its CPU with its averages decayed to
    // nothing, its timer due at `start`, where the hrtimer wakes it like any sleeper.
    p->__state = TASK_INTERRUPTIBLE;
    p->se.avg = sched_avg{};
    hrtimer_sleeper_start(rq_of(p->cpu), p.get(), start, 0);
    mm_cid_ops->fork(rq_of(p->cpu), p.get());  // forked before the run: sched_mm_cid_fork()
  } else if (!cfg_.launcher_task) {
    // launcher=outside: a parent off the machine forks the threads one after another.
    auto st = std::make_unique<sim::Timer>();
    st->fn = fork_from_outside;
    st->ctx = p.get();
    const sim::Time fork_at = std::max(start, next_fork_);
    next_fork_ = fork_at + machine_.costs.clone_ns;
    engine_->arm(st.get(), fork_at);
    start_timers_.push_back(std::move(st));
  }
  const int pid = p->pid;
  prog->pid = pid;
  programs_.push_back(std::move(prog));
  task_struct* t = p.get();
  tasks_.push_back(std::move(p));
  // After p, so that tasks() stays in pid order when this creates the launcher.
  if (!attr.preexisting && cfg_.launcher_task) queue_fork(t, start);
  return pid;
}

mm_struct* KernelImpl::mm_of(int tgid) {
  for (auto& mm : mms)
    if (mm->tgid == tgid) return mm.get();
  return nullptr;
}

void KernelImpl::TEST_set_fatal_signal(int pid) {
  for (auto& t : tasks_)
    if (t->pid == pid) t->slice.fatal_signal = true;
}

void KernelImpl::exit_mm(int tgid) {
  mm_struct* mm = mm_of(tgid);
  if (!mm) return;
  mm->free_list.clear();
  mm->pages.clear();
}

bool KernelImpl::has_threads(int tgid) const {
  for (const auto& t : tasks_)
    if (t->tgid == tgid) return true;
  return false;
}

void KernelImpl::start() {
  mm_cid_metrics_start(this);
  if (cfg_.nohz_idle) {  // ticks start when CPUs first become busy: every CPU is NOHZ idle
    nohz_idle_mask.assign(nohz_idle_mask.size(), true);
    for (cpuidle_cpu& c : cpuidle) c.tick_stopped = true;
    return;
  }
  for (rq& rq : rqs_) tick_sched_timer_start(&rq, tick_next_expiry(&rq, 0));
}

void KernelImpl::finish(sim::Time end) {
  for (rq& rq : rqs_) cpu_finish(&rq, end);
}

void KernelImpl::warn_once(const std::string& what) {
  if (warnings_.count++ == 0) warnings_.first = what;
}

void KernelImpl::user_store(UserWord* w, int64_t v) {
  const int64_t old = w->value;
  w->value = v;
  w->last_writer_cpu = current_cpu_;
  if (old != v) w->changed_at = engine_->now();
  if (old != v && w->spinners) cpu_word_changed(this, w, current_cpu_, engine_->now());
}

bool KernelImpl::user_cmpxchg(UserWord* w, int64_t expected, int64_t desired) {
  if (w->value != expected) return false;
  user_store(w, desired);
  return true;
}

int64_t KernelImpl::user_fetch_add(UserWord* w, int64_t delta) {
  const int64_t old = w->value;
  user_store(w, old + delta);
  return old;
}

const std::string& KernelImpl::process_name(int tgid) const {
  static const std::string none;
  for (const auto& [id, name] : process_names_)
    if (id == tgid) return name;
  return none;
}


// ---- kernel::Kernel, the public interface: each method is KernelImpl's. ----

namespace {
KernelImpl* impl(Kernel* k) { return static_cast<KernelImpl*>(k); }
const KernelImpl* impl(const Kernel* k) { return static_cast<const KernelImpl*>(k); }
}  // namespace

std::unique_ptr<Kernel> Kernel::create(sim::Engine* engine, const hw::Machine& machine,
                                       const KernelConfig& cfg) {
  return std::make_unique<KernelImpl>(engine, machine, cfg);
}
Kernel::~Kernel() = default;
int Kernel::create_process(const std::string& name) { return impl(this)->create_process(name); }
int Kernel::create_thread(int tgid, const TaskAttr& attr, std::unique_ptr<UserContext> prog,
                          sim::Time start) {
  return impl(this)->create_thread(tgid, attr, std::move(prog), start);
}
std::string Kernel::validate_attr(const TaskAttr& attr) const { return impl(this)->validate_attr(attr); }
void Kernel::start() { impl(this)->start(); }
void Kernel::finish(sim::Time end) { impl(this)->finish(end); }
void Kernel::user_store(UserWord* w, int64_t v) { impl(this)->user_store(w, v); }
bool Kernel::user_cmpxchg(UserWord* w, int64_t expected, int64_t desired) {
  return impl(this)->user_cmpxchg(w, expected, desired);
}
int64_t Kernel::user_fetch_add(UserWord* w, int64_t delta) { return impl(this)->user_fetch_add(w, delta); }
const std::string& Kernel::process_name(int tgid) const { return impl(this)->process_name(tgid); }
KernelStats Kernel::snapshot() const { return impl(this)->snapshot(); }
int Kernel::create_task_group(const std::string& path, int parent) {
  return impl(this)->create_task_group(path, parent);
}
void Kernel::set_task_group_shares(int id, unsigned long shares) { impl(this)->set_task_group_shares(id, shares); }
void Kernel::set_task_group_cpu_max(int id, int64_t quota_us, int64_t period_us) {
  impl(this)->set_task_group_cpu_max(id, quota_us, period_us);
}

void Kernel::set_task_group_cpu_max_burst(int id, int64_t burst_us) {
  impl(this)->set_task_group_cpu_max_burst(id, burst_us);
}
void Kernel::set_task_group_weight_nice(int id, int nice) { impl(this)->set_task_group_weight_nice(id, nice); }
void Kernel::set_task_group_idle(int id, int idle) { impl(this)->set_task_group_idle(id, idle); }
void Kernel::set_task_group_cpus(int id, const std::vector<int>& cpus) { impl(this)->set_task_group_cpus(id, cpus); }
int Kernel::task_group_at(const std::string& path) { return impl(this)->task_group_at(path); }
void Kernel::use_task_group(int id) { impl(this)->use_task_group(id); }
int Kernel::setsid() { return impl(this)->setsid(); }
void Kernel::use_session(int sid) { impl(this)->use_session(sid); }
int Kernel::current_session() const { return impl(this)->current_session(); }
int Kernel::session_of(int tgid) const { return impl(this)->session_of(tgid); }
void Kernel::set_autogroup_nice(int sid, int nice) { impl(this)->set_autogroup_nice(sid, nice); }
int Kernel::add_netdev(const NicRxQueueAttr& attr) { return netdev_add(impl(this), attr); }
int Kernel::add_udp_socket(const UdpSockAttr& attr) { return udp_sock_add(impl(this), attr); }

void Kernel::cpu_latency_qos_add_request(int32_t latency_us) {
  KernelImpl* k = impl(this);
  const sim::Time ns = sim::Time{latency_us} * sim::kNsecPerUsec;
  k->cpu_latency_qos_ns = std::min(k->cpu_latency_qos_ns, ns);
}
std::string Kernel::validate_udp_socket(const UdpSockAttr& attr) const { return validate_udp_sock_attr(attr); }
std::string Kernel::validate_netdev(const NicRxQueueAttr& attr) const {
  return validate_nic_attr(*impl(this), attr);
}

}  // namespace kernel
