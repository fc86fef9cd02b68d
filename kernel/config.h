// Kernel build and boot configuration of a simulated run: version, HZ, preemption model,
// scheduler features and tunables. A value type, fixed for the whole run.
#pragma once
#include <cstdint>
#include <string>

#include "sim/time.h"

namespace kernel {

// The kernel versions whose scheduler behaviour differs in ways the model implements.
enum class KernelVersion { V6_12, V6_18, V7_0 };

enum class PreemptModel { None, Voluntary, Full, Lazy };

enum sched_feat_bit {
#define SCHED_FEAT(name, v6_12, v6_18, v7_0) __SCHED_FEAT_##name,
#include "kernel/sched/features.h"
#undef SCHED_FEAT
  __SCHED_FEAT_NR,
};

// Which time slice extension the kernel carries (None, then one value per line of
// kernel/slice_ext_designs.h), and the review's policy switches.
enum class SliceExtAbi {
  None,
#define SLICE_EXT_DESIGN(Enum, name) Enum,
#include "kernel/slice_ext_designs.h"
#undef SLICE_EXT_DESIGN
};
inline constexpr int kNrSliceExtAbi = 1
#define SLICE_EXT_DESIGN(Enum, name) +1
#include "kernel/slice_ext_designs.h"
#undef SLICE_EXT_DESIGN
    ;

struct SliceExtConfig {
  SliceExtAbi abi = SliceExtAbi::None;
  // Extension length; 0 = the ABI's own: 50 us (RFC, 2023 prototype: hrtick_local_start(50us)),
  // 5 us (7.0 debugfs rseq/slice_ext_nsec default; range 5..50 us).
  sim::Time nsec = 0;
  bool tick = false;         // grant until the next tick instead (Rostedt's 2023 proposal)
  bool fair_only = false;    // grant only if every runnable task is fair (Prateek)
  bool no_defer_rt = false;  // never defer a reschedule caused by an RT wakeup
  bool lazy_remote = false;  // while granted, remote wakeups neither set NEED_RESCHED nor IPI
  double rseq_miss = 0;      // probability the rseq page is not resident (hint missed)
  int page_limit = 0;        // RFC: [task_shared] pages per process (0 = no limit)
  bool rseq_registered = true;  // glibc registers rseq for every thread
  // rseq_len of that registration: 32 (ORIG_RSEQ_SIZE) is what glibc 2.35-2.40 register;
  // more is an "RSEQ ABI v2" registration (glibc 2.41+ size theirs from AT_RSEQ_FEATURE_SIZE,
  // 33 on 7.0; the area is AT_RSEQ_ALIGN = 64 bytes).
  int rseq_len = 32;
  // 7.0.10 and later (stable backport of "rseq: Reenable performance optimizations
  // conditionally", 99428157dcf3): time slice extensions only for v2 registrations, and a
  // legacy registration gets the rseq event on every switch. false = 7.0 as released.
  bool require_rseq_v2 = false;
};

// The rseq concurrency ID (mm_cid) implementation (kernel/sched/mm_cid.h): Default = the
// version's (6.12, 6.18: lazy; 7.0: owner), Off, then one value per line of
// kernel/sched/mm_cid_impls.h.
enum class MmCid {
  Default,
  Off,
#define MM_CID_IMPL(Enum, name) Enum,
#include "kernel/sched/mm_cid_impls.h"
#undef MM_CID_IMPL
};
inline constexpr int kNrMmCid = 2
#define MM_CID_IMPL(Enum, name) +1
#include "kernel/sched/mm_cid_impls.h"
#undef MM_CID_IMPL
    ;
// Softirq handling (kernel/softirq.cc): what the kernel was built or booted with.
struct SoftirqConfig {
  bool ksoftirqd = false;            // the per-CPU ksoftirqd/N threads exist (runs modelling softirq load)
  bool irq_time_accounting = false;  // CONFIG_IRQ_TIME_ACCOUNTING
  bool threadirqs = false;           // boot option threadirqs: force_irqthreads()
  bool preempt_rt = false;           // softirq handling of CONFIG_PREEMPT_RT
  bool latency_sensi_flag = false;   // the kernel carries the latency_sensi_flag patch (May 2024)
  // NET_RX (kernel/net/dev.cc): net.core.netdev_budget, packets per net_rx_action(); and
  // net.core.netdev_budget_usecs, its time limit (-1 = the kernel's default, 2 * USEC_PER_SEC /
  // HZ, i.e. 2 jiffies at any HZ).
  int netdev_budget = 300;
  int netdev_budget_usecs = -1;
  // /sys/class/net/<dev>/threaded = 1 on every device: each NAPI instance polls in its own
  // napi/<dev>-<id> kthread (SCHED_NORMAL, nice 0) instead of NET_RX softirq.
  bool napi_threaded = false;
};

struct KernelConfig {
  KernelVersion version = KernelVersion::V7_0;
  int hz = 250;
  PreemptModel preempt = PreemptModel::Lazy;
  uint32_t features = 0;  // bit per sched_feat_bit
  // sysctl_sched_base_slice before scaling ("normalized"), per version (see config.cc).
  sim::Time base_slice_ns = 700000;
  int tunable_scaling = 1;  // SCHED_TUNABLESCALING_LOG
  bool nohz_idle = true;    // CONFIG_NO_HZ_IDLE: idle CPUs stop their tick
  // Boot parameter skew_tick=1: CPU n's tick is offset by n * (TICK_NSEC / 2 / nr_cpus)
  // (tick_setup_sched_timer()); 0, the default, puts every CPU's tick on one grid.
  bool skew_tick = false;
  // cpuidle_idle_call()'s got_tick rule (f4c31b07b136, in 7.0; 6.12.y and 6.18.y stable from
  // March 2026): without a cpuidle driver, an idle CPU stops its tick only in a round of the
  // idle loop after one the tick ended. false = before it (6.12.0, 6.18.2): at every round.
  bool idle_got_tick = false;
  // The timer slack of the fair tasks' sleeps (task_struct::timer_slack_ns, inherited from
  // init's 50 us through every fork; prctl(PR_SET_TIMERSLACK) changes it per task, not
  // modelled). __setscheduler_params() gives RT and deadline tasks none.
  sim::Time timer_slack_ns = 50000;
  // Who forks the threads (not a Linux setting): `task` (true), the launcher, a task of its
  // own that takes CPU time and load where it runs (kernel/fork.cc); `outside` (false), a
  // parent off the machine that costs nothing and forks each thread from its first allowed
  // CPU, clone_ns apart: for tests of one mechanism, and to see what the launcher changes.
  bool launcher_task = true;
  // The CPU the launcher task's parent (the shell) runs on when it forks the launcher (not a
  // Linux setting): wake_up_new_task() places the launcher from there, so it decides the
  // launcher's LLC and socket and, through fork placement, where the threads start.
  // kLauncherCpuRandom draws it per seed (a shell runs wherever it last woke up).
  static constexpr int kLauncherCpuRandom = -1;
  int launcher_cpu = 0;
  sim::Time migration_cost_ns = 500000;  // sysctl_sched_migration_cost
  int rr_timeslice_ms = 100;             // sched_rr_timeslice_ms
  // Wakeup preemption picks through pick_next_entity(), which finishes the dequeue of a
  // picked delayed entity, and picks again while entities remain: ac8e69e69363 ("sched/fair:
  // Fix wakeup_preempt_fair() vs delayed dequeue") and 9f6d929ee2c6 ("sched/fair: Fix
  // wakeup_preempt_fair() for not waking up task"), in 7.0.y and 6.18.y stable from May
  // 2026. false = the releases (6.12, 6.18.2, 7.0), whose wakeup pick is a bare
  // __pick_eevdf(); no 6.12 stable carries the fix.
  bool wakeup_pick_next_entity = false;
  // kernel.sched_autogroup_enabled (CONFIG_SCHED_AUTOGROUP): each session's tasks form a
  // task group (kernel/sched/autogroup.cc). Distribution kernels boot with 1 (autogroup.c's
  // sysctl_sched_autogroup_enabled = 1 wherever CONFIG_SCHED_AUTOGROUP=y), and so does the
  // model; `noautogroup` on the command line is sched_autogroup_enabled=0.
  bool sched_autogroup_enabled = true;
  // sysctl kernel.sched_cfs_bandwidth_slice_us: how much runtime a CPU's runqueue of a group
  // with a cpu.max quota draws from the group's pool at a time.
  int sched_cfs_bandwidth_slice_us = 5000;
  // The fair deadline server (6.12+): per CPU, fair tasks get this much CPU per period even
  // under RT load (debugfs sched/fair_server/cpuN/{runtime,period}); runtime 0 disables it.
  sim::Time fair_server_runtime_ns = 50000000;
  sim::Time fair_server_period_ns = 1000000000;
  SliceExtConfig slice_ext;
  MmCid mm_cid = MmCid::Default;
  // CONFIG_RSEQ_CID_SCAN_BATCH (batched series v2); 0 = its default, 8, or the machine's CPU
  // count if smaller (a pass is then one batch, as the kernel's min() with the CPU count makes it).
  int mm_cid_scan_batch = 0;
  // Simulator-only: sample what user space sees of mm_cid every this many ms and report the
  // scan's and the IDs' metrics (docs/mm-cid.md); 0 = neither.
  int mm_cid_sample_ms = 0;
  SoftirqConfig softirq;
  uint64_t seed = 1;                     // for the kernel's own random draws (rseq_miss)

  sim::Time tick_nsec() const { return (1000000000LL + hz / 2) / hz; }  // TICK_NSEC
  bool feat(sched_feat_bit b) const { return features & (1u << b); }
};

// Defaults of `version`: base slice, preemption model, features.
KernelConfig default_config(KernelVersion version);

// A whole decimal integer that fits in long long (false on anything else, overflow included).
bool parse_int(const std::string& v, long long* out);

// Parsing for scenario files and --set; return "" on success, else an error naming `key`.
std::string parse_version(const std::string& s, KernelVersion* out);
std::string parse_preempt(const std::string& s, PreemptModel* out);
const char* version_name(KernelVersion v);
std::string parse_slice_ext_abi(const std::string& s, SliceExtAbi* out);
const char* slice_ext_abi_name(SliceExtAbi a);
const char* preempt_name(PreemptModel m);
// Sets `key` (e.g. "hz", "preempt", "sched_feat.RUN_TO_PARITY", "base_slice_ns") from text.
std::string set_config_key(KernelConfig* cfg, const std::string& key, const std::string& value);
// Checks cross-field rules (HZ choices, models available in that version).
std::string validate_config(const KernelConfig& cfg);
// mm_cid: the implementation in force (Default resolved by version), and its name.
MmCid mm_cid_effective(const KernelConfig& cfg);
const char* mm_cid_name(MmCid m);
// Rules that need the machine: mm_cid.scan_batch within 1..nr_cpus.
std::string validate_config_machine(const KernelConfig& cfg, int nr_cpus);
// Names of the feature flags in list order (defaults: default_config()).
int nr_sched_feats();
const char* sched_feat_name(int bit);

}  // namespace kernel
