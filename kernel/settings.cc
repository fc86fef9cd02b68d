// The kernel settings, declared once (kernel/settings.h), and what is generated from them:
// set_config_key(), its error text, `schedlab list settings` and docs/settings.md.
#include "kernel/settings.h"

#include <charconv>
#include <cstdlib>
#include <type_traits>

#include "kernel/slice_ext.h"
#include "sim/parse.h"

namespace kernel {

namespace {

// Accessors of a KernelConfig field (M) or of a field of one of its structs (O, then M).
template <auto M>
int64_t get_field(const KernelConfig& c, int) {
  return static_cast<int64_t>(c.*M);
}
template <auto M>
void set_field(KernelConfig* c, int, int64_t v) {
  c->*M = static_cast<std::remove_reference_t<decltype(c->*M)>>(v);
}
template <auto O, auto M>
int64_t get_sub(const KernelConfig& c, int) {
  return static_cast<int64_t>((c.*O).*M);
}
template <auto O, auto M>
void set_sub(KernelConfig* c, int, int64_t v) {
  (c->*O).*M = static_cast<std::remove_reference_t<decltype((c->*O).*M)>>(v);
}
int64_t get_feat(const KernelConfig& c, int bit) { return c.feat(static_cast<sched_feat_bit>(bit)); }
void set_feat(KernelConfig* c, int bit, int64_t v) {
  if (v)
    c->features |= 1u << bit;
  else
    c->features &= ~(1u << bit);
}

const char* preempt_choice(int i) {
  return i <= static_cast<int>(PreemptModel::Lazy) ? preempt_name(static_cast<PreemptModel>(i)) : nullptr;
}
const char* slice_ext_choice(int i) {
  return i < kNrSliceExtAbi ? slice_ext_abi_name(static_cast<SliceExtAbi>(i)) : nullptr;
}
const char* mm_cid_choice(int i) { return i < kNrMmCid ? mm_cid_name(static_cast<MmCid>(i)) : nullptr; }
// launcher_task: true = "task" (value 0), false = "outside" (value 1).
const char* launcher_choice(int i) { return i == 0 ? "task" : i == 1 ? "outside" : nullptr; }
int64_t get_launcher(const KernelConfig& c, int) { return c.launcher_task ? 0 : 1; }
void set_launcher(KernelConfig* c, int, int64_t v) { c->launcher_task = v == 0; }

using K = KernelConfig;
using S = SliceExtConfig;
using Q = SoftirqConfig;
using T = SettingType;

// The list. Bounds are what the kernel accepts where it has a knob (debugfs, sysctl, boot
// parameter), else what keeps the simulation meaningful; rules between settings are in
// validate_config(). Help says what Linux names the knob and what the value means.
std::vector<Setting> make_settings() {
  std::vector<Setting> v = {
      {.name = "hz", .type = T::Int,
       .help = "CONFIG_HZ, timer ticks per second; a run takes 100, 250, 300 or 1000",
       .lo = 1, .hi = 100000, .get = get_field<&K::hz>, .set = set_field<&K::hz>},
      {.name = "preempt", .type = T::Enum,
       .help = "preemption model (CONFIG_PREEMPT_*); 6.12 has no lazy, 7.0 on x86 only full and lazy",
       .choice = preempt_choice, .noun = "model",
       .get = get_field<&K::preempt>, .set = set_field<&K::preempt>},
      {.name = "base_slice_ns", .type = T::Int,
       .help = "sysctl_sched_base_slice before the CPU-count factor (debugfs base_slice_ns shows "
               "it scaled)",
       .lo = 100000, .hi = 100000000,
       .get = get_field<&K::base_slice_ns>, .set = set_field<&K::base_slice_ns>},
      {.name = "nohz_idle", .type = T::Bool, .help = "CONFIG_NO_HZ_IDLE: idle CPUs stop their tick",
       .get = get_field<&K::nohz_idle>, .set = set_field<&K::nohz_idle>},
      {.name = "skew_tick", .type = T::Boot01,
       .help = "boot parameter skew_tick: offset CPU n's tick by n * TICK_NSEC / 2 / nr_cpus",
       .get = get_field<&K::skew_tick>, .set = set_field<&K::skew_tick>},
      {.name = "idle_got_tick", .type = T::Bool,
       .help = "without a cpuidle driver, the idle loop stops the tick only after a round the "
               "tick ended (f4c31b07b136: 7.0, and 6.12.y/6.18.y from March 2026; false = every "
               "round, the releases 6.12.0 and 6.18.2)",
       .get = get_field<&K::idle_got_tick>, .set = set_field<&K::idle_got_tick>},
      {.name = "timer_slack_ns", .type = T::Int,
       .help = "the fair tasks' timer slack (PR_SET_TIMERSLACK; init's default): a sleep ends "
               "at the first timer interrupt of its CPU in [expiry, expiry + slack]; RT tasks "
               "have none",
       .lo = 0, .hi = 1000000000, .unit = "ns",
       .get = get_field<&K::timer_slack_ns>, .set = set_field<&K::timer_slack_ns>},
      {.name = "launcher", .type = T::Enum,
       .help = "who forks the threads: a task that takes CPU time and load where it runs, or a "
               "parent off the machine that costs nothing (not a Linux setting)",
       .choice = launcher_choice, .get = get_launcher, .set = set_launcher},
      // Whether the CPU exists is checked against the machine (validate_config_machine).
      {.name = "launcher_cpu", .type = T::Int,
       .help = "the CPU the launcher is forked from (the shell's CPU), or random: drawn per seed "
               "(not a Linux setting)",
       .lo = 0, .hi = 8191, .word = "random", .word_value = KernelConfig::kLauncherCpuRandom,
       .get = get_field<&K::launcher_cpu>, .set = set_field<&K::launcher_cpu>},
      {.name = "migration_cost_ns", .type = T::Int, .help = "sysctl_sched_migration_cost",
       .lo = 0, .hi = 1000000000000LL,
       .get = get_field<&K::migration_cost_ns>, .set = set_field<&K::migration_cost_ns>},
      {.name = "rr_timeslice_ms", .type = T::Int, .help = "sched_rr_timeslice_ms: SCHED_RR's time slice",
       .lo = 1, .hi = 1000000,
       .get = get_field<&K::rr_timeslice_ms>, .set = set_field<&K::rr_timeslice_ms>},
      {.name = "sched_autogroup_enabled", .type = T::Boot01,
       .help = "sysctl kernel.sched_autogroup_enabled: the tasks of each session form a task group "
               "(autogroup, on as distributions boot; 0 is the `noautogroup` boot option); a workload or "
               "an --also starts in a new session with session=own",
       .get = get_field<&K::sched_autogroup_enabled>, .set = set_field<&K::sched_autogroup_enabled>},
      {.name = "sched_cfs_bandwidth_slice_us", .type = T::Int,
       .help = "sysctl kernel.sched_cfs_bandwidth_slice_us: the runtime a CPU draws at a time from "
               "the pool of a cgroup with a cpu.max quota",
       .lo = 1, .hi = 1000000,
       .get = get_field<&K::sched_cfs_bandwidth_slice_us>, .set = set_field<&K::sched_cfs_bandwidth_slice_us>},
      {.name = "wakeup_pick_next_entity", .type = T::Bool,
       .help = "wakeup preemption picks through pick_next_entity(), dequeuing a picked delayed "
               "entity and picking again (ac8e69e69363, 9f6d929ee2c6: 7.0.y and 6.18.y from May "
               "2026; false = the releases; not in 6.12)",
       .get = get_field<&K::wakeup_pick_next_entity>, .set = set_field<&K::wakeup_pick_next_entity>},
      // debugfs sched/fair_server/cpuN: the period within 100 us .. 2^22 us
      // (fair_server_period_min/max), the runtime at most the period.
      {.name = "fair_server.runtime_ns", .type = T::Int,
       .help = "fair deadline server runtime per period (debugfs fair_server/cpuN/runtime; 0 = off)",
       .lo = 0, .hi = 4194304000LL, .unit = "ns",
       .get = get_field<&K::fair_server_runtime_ns>, .set = set_field<&K::fair_server_runtime_ns>},
      {.name = "fair_server.period_ns", .type = T::Int,
       .help = "fair deadline server period (debugfs fair_server/cpuN/period)",
       .lo = 100000, .hi = 4194304000LL, .unit = "ns",
       .get = get_field<&K::fair_server_period_ns>, .set = set_field<&K::fair_server_period_ns>},
      {.name = "slice_ext", .type = T::Enum,
       .help = "the time slice extension the kernel carries (docs/slice-extension.md)",
       .choice = slice_ext_choice, .noun = "variant", .default_note = "the workload's ext",
       .get = get_sub<&K::slice_ext, &S::abi>, .set = set_sub<&K::slice_ext, &S::abi>},
      // 0 cannot be given: mainline's debugfs rseq/slice_ext_nsec refuses it (ERANGE), and for
      // the others a zero-length extension would silently be the design's default.
      {.name = "slice_ext.nsec", .type = T::Duration,
       .help = "grant length (7.0: debugfs rseq/slice_ext_nsec)",
       .lo = 1, .hi = 1000000000,
       .range = "from 1ns to 1s, like 50us (mainline: 5us..50us)",
       .default_note = "the design's: 50us rfc and rseq2023, 5us mainline",
       .get = get_sub<&K::slice_ext, &S::nsec>, .set = set_sub<&K::slice_ext, &S::nsec>},
      {.name = "slice_ext.tick", .type = T::Bool,
       .help = "grant until the next tick instead (Rostedt's 2023 proposal)",
       .get = get_sub<&K::slice_ext, &S::tick>, .set = set_sub<&K::slice_ext, &S::tick>},
      {.name = "slice_ext.fair_only", .type = T::Bool,
       .help = "grant only if every runnable task is fair (review: Prateek)",
       .get = get_sub<&K::slice_ext, &S::fair_only>, .set = set_sub<&K::slice_ext, &S::fair_only>},
      {.name = "slice_ext.no_defer_rt", .type = T::Bool,
       .help = "never defer a reschedule caused by an RT wakeup (review)",
       .get = get_sub<&K::slice_ext, &S::no_defer_rt>, .set = set_sub<&K::slice_ext, &S::no_defer_rt>},
      {.name = "slice_ext.lazy_remote", .type = T::Bool,
       .help = "while granted, remote wakeups neither set NEED_RESCHED nor send an IPI (review)",
       .get = get_sub<&K::slice_ext, &S::lazy_remote>, .set = set_sub<&K::slice_ext, &S::lazy_remote>},
      {.name = "slice_ext.rseq_miss", .type = T::Double,
       .help = "probability the rseq page is not resident: the kernel's access fails and the hint "
               "is dropped (the concern raised against the RFC, not 7.0, which faults the page in)",
       .dlo = 0, .dhi = 1, .range = "a probability in 0..1",
       .get_d = [](const KernelConfig& c) { return c.slice_ext.rseq_miss; },
       .set_d = [](KernelConfig* c, double x) { c->slice_ext.rseq_miss = x; }},
      {.name = "slice_ext.page_limit", .type = T::Int,
       .help = "RFC: [task_shared] pages per process (0 = no limit)", .lo = 0, .hi = 1000000,
       .get = get_sub<&K::slice_ext, &S::page_limit>, .set = set_sub<&K::slice_ext, &S::page_limit>},
      {.name = "slice_ext.rseq_registered", .type = T::Bool,
       .help = "glibc registers rseq for every thread",
       .get = get_sub<&K::slice_ext, &S::rseq_registered>,
       .set = set_sub<&K::slice_ext, &S::rseq_registered>},
      // sys_rseq() refuses less than ORIG_RSEQ_SIZE (EINVAL).
      {.name = "slice_ext.rseq_len", .type = T::Int,
       .help = "rseq_len each thread registers: 32 = glibc 2.35-2.40 (legacy), more = RSEQ ABI v2 "
               "as glibc 2.41+ (e.g. 64)",
       .lo = 32, .hi = 65536,
       .get = get_sub<&K::slice_ext, &S::rseq_len>, .set = set_sub<&K::slice_ext, &S::rseq_len>},
      {.name = "slice_ext.require_rseq_v2", .type = T::Bool,
       .help = "7.0.10+: slice extensions only for v2 registrations (false = 7.0 as released)",
       .get = get_sub<&K::slice_ext, &S::require_rseq_v2>,
       .set = set_sub<&K::slice_ext, &S::require_rseq_v2>},
      {.name = "mm_cid", .type = T::Enum,
       .help = "rseq concurrency IDs: default = lazy in 6.12 and 6.18, owner in 7.0; batched "
               "needs 6.18",
       .choice = mm_cid_choice, .noun = "implementation",
       .get = get_field<&K::mm_cid>, .set = set_field<&K::mm_cid>},
      // CONFIG_RSEQ_CID_SCAN_BATCH: 1..NR_CPUS, checked against the machine by
      // validate_config_machine().
      {.name = "mm_cid.scan_batch", .type = T::Int,
       .help = "batched: CPUs per scan call (CONFIG_RSEQ_CID_SCAN_BATCH)", .lo = 1, .hi = 1000000,
       .range = "from 1 to the CPU count", .default_note = "8, or the CPU count if fewer",
       .get = get_field<&K::mm_cid_scan_batch>, .set = set_field<&K::mm_cid_scan_batch>},
      {.name = "mm_cid.sample_ms", .type = T::Int,
       .help = "sample what user space sees of mm_cid every N ms and report the scan's latencies "
               "and the IDs (docs/mm-cid.md; 0 = not reported; not a Linux setting)",
       .lo = 0, .hi = 1000,
       .get = get_field<&K::mm_cid_sample_ms>, .set = set_field<&K::mm_cid_sample_ms>},
      {.name = "softirq.ksoftirqd", .type = T::Bool,
       .help = "the per-CPU ksoftirqd/N threads exist (runs that model softirq load)",
       .get = get_sub<&K::softirq, &Q::ksoftirqd>, .set = set_sub<&K::softirq, &Q::ksoftirqd>},
      {.name = "softirq.irq_time_accounting", .type = T::Bool, .help = "CONFIG_IRQ_TIME_ACCOUNTING",
       .get = get_sub<&K::softirq, &Q::irq_time_accounting>,
       .set = set_sub<&K::softirq, &Q::irq_time_accounting>},
      {.name = "softirq.threadirqs", .type = T::Bool,
       .help = "boot option threadirqs (force_irqthreads())",
       .get = get_sub<&K::softirq, &Q::threadirqs>, .set = set_sub<&K::softirq, &Q::threadirqs>},
      {.name = "softirq.preempt_rt", .type = T::Bool,
       .help = "softirq handling of CONFIG_PREEMPT_RT (needs preempt full or lazy)",
       .get = get_sub<&K::softirq, &Q::preempt_rt>, .set = set_sub<&K::softirq, &Q::preempt_rt>},
      {.name = "softirq.latency_sensi_flag", .type = T::Bool,
       .help = "the kernel carries the latency_sensi_flag patch (May 2024)",
       .get = get_sub<&K::softirq, &Q::latency_sensi_flag>,
       .set = set_sub<&K::softirq, &Q::latency_sensi_flag>},
      {.name = "softirq.napi_threaded", .type = T::Bool,
       .help = "threaded NAPI (/sys/class/net/<dev>/threaded): each NAPI instance polls in a "
               "napi/<dev>-<id> fair kthread instead of NET_RX softirq",
       .get = get_sub<&K::softirq, &Q::napi_threaded>, .set = set_sub<&K::softirq, &Q::napi_threaded>},
      // net.core.netdev_budget (proc_dointvec; 0 would end every pass before its first poll).
      {.name = "softirq.netdev_budget", .type = T::Int,
       .help = "net.core.netdev_budget: packets one net_rx_action() pass may take",
       .lo = 1, .hi = 1000000,
       .get = get_sub<&K::softirq, &Q::netdev_budget>, .set = set_sub<&K::softirq, &Q::netdev_budget>},
      // net.core.netdev_budget_usecs (proc_dointvec_minmax, extra1 = SYSCTL_ZERO).
      {.name = "softirq.netdev_budget_usecs", .type = T::Int,
       .help = "net.core.netdev_budget_usecs: time limit of one net_rx_action() pass",
       .lo = 0, .hi = 10000000, .word = "default", .word_value = -1, .unit = "us",
       .default_note = "default: 2 jiffies (2 * USEC_PER_SEC / HZ, the sysctl's default)",
       .get = get_sub<&K::softirq, &Q::netdev_budget_usecs>,
       .set = set_sub<&K::softirq, &Q::netdev_budget_usecs>},
  };
  // One entry per scheduler feature (kernel/sched/features.h, defaults per version there).
  static std::vector<std::string> feat_names;
  feat_names.reserve(nr_sched_feats());
  for (int i = 0; i < nr_sched_feats(); ++i) feat_names.push_back(std::string("sched_feat.") + sched_feat_name(i));
  for (int i = 0; i < nr_sched_feats(); ++i)
    v.push_back({.name = feat_names[i].c_str(), .type = T::Bool, .help = "",
                 .get = get_feat, .set = set_feat, .arg = i});
  return v;
}

bool parse_bool(const std::string& v, bool* out) {
  if (v == "true" || v == "1" || v == "on" || v == "yes") return *out = true, true;
  if (v == "false" || v == "0" || v == "off" || v == "no") return *out = false, true;
  return false;
}

// "5us" for 5000, "1s" for 1000000000: the largest unit that divides the value.
std::string duration_text(int64_t ns) {
  if (ns == 0) return "0";
  if (ns % 1000000000 == 0) return std::to_string(ns / 1000000000) + "s";
  if (ns % 1000000 == 0) return std::to_string(ns / 1000000) + "ms";
  if (ns % 1000 == 0) return std::to_string(ns / 1000) + "us";
  return std::to_string(ns) + "ns";
}

std::string double_text(double x) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), x);
  return std::string(buf, r.ptr);
}

// "a, b or c" (`last` " or ") or "a, b, c" (`last` ", ").
std::string choices_text(const Setting& s, const char* sep, const char* last) {
  std::string out;
  int n = 0;
  while (s.choice(n)) ++n;
  for (int i = 0; i < n; ++i) out += (i == 0 ? "" : i == n - 1 ? last : sep) + std::string(s.choice(i));
  return out;
}

// The bounds as an error or the docs word them.
std::string range_text(const Setting& s) {
  if (s.range) return s.range;
  switch (s.type) {
    case SettingType::Int:
      return "in " + std::to_string(s.lo) + ".." + std::to_string(s.hi) + (s.unit ? std::string(" ") + s.unit : "");
    case SettingType::Duration: return "from " + duration_text(s.lo) + " to " + duration_text(s.hi);
    case SettingType::Double: return "in " + double_text(s.dlo) + ".." + double_text(s.dhi);
    default: return "";
  }
}

const std::vector<std::string>& families() {
  static const std::vector<std::string> f = [] {
    std::vector<std::string> out;
    for (const Setting& s : kernel_settings()) {
      const std::string name = s.name;
      const size_t dot = name.find('.');
      if (dot == std::string::npos) continue;
      const std::string prefix = name.substr(0, dot + 1);
      bool seen = false;
      for (const std::string& p : out) seen |= p == prefix;
      if (!seen) out.push_back(prefix);
    }
    return out;
  }();
  return f;
}

}  // namespace

const std::vector<Setting>& kernel_settings() {
  static const std::vector<Setting> list = make_settings();
  return list;
}

const Setting* find_setting(const std::string& key) {
  for (const Setting& s : kernel_settings())
    if (key == s.name) return &s;
  return nullptr;
}

bool is_config_key(const std::string& key) {
  if (find_setting(key)) return true;
  for (const std::string& p : families())
    if (key.rfind(p, 0) == 0) return true;
  return false;
}

std::string set_config_key(KernelConfig* cfg, const std::string& key, const std::string& value) {
  const Setting* s = find_setting(key);
  if (s == nullptr) {
    const std::string feat = "sched_feat.";
    if (key.rfind(feat, 0) == 0) return key + ": unknown scheduler feature '" + key.substr(feat.size()) + "'";
    return "unknown kernel parameter '" + key + "'";
  }
  const std::string got = " (got '" + value + "')";
  switch (s->type) {
    case SettingType::Bool: {
      bool b = false;
      if (!parse_bool(value, &b)) return key + ": expected true or false" + got;
      s->set(cfg, s->arg, b);
      return "";
    }
    case SettingType::Boot01: {
      // The boot parameter is 0 or 1 (tick_setup_sched_timer() skews on any non-zero value,
      // but no other value means anything); true/false read as 1/0.
      if (value != "0" && value != "1" && value != "true" && value != "false")
        return key + ": expected 0, 1, true or false" + got;
      s->set(cfg, s->arg, value == "1" || value == "true");
      return "";
    }
    case SettingType::Int: {
      long long n = 0;
      if (s->word && value == s->word) return s->set(cfg, s->arg, s->word_value), "";
      if (!parse_int(value, &n) || n < s->lo || n > s->hi)
        return key + ": must be an integer " + range_text(*s) + (s->word ? std::string(" or ") + s->word : "") + got;
      s->set(cfg, s->arg, n);
      return "";
    }
    case SettingType::Duration: {
      int64_t ns = 0;
      if (!sim::parse_duration(value, &ns) || ns < s->lo || ns > s->hi)
        return key + ": expected a duration with its unit " + range_text(*s) + got;
      s->set(cfg, s->arg, ns);
      return "";
    }
    case SettingType::Enum: {
      for (int i = 0; s->choice(i); ++i)
        if (value == s->choice(i)) return s->set(cfg, s->arg, i), "";
      if (s->noun)
        return key + ": unknown " + s->noun + " '" + value + "' (choose " + choices_text(*s, ", ", ", ") + ")";
      return key + ": expected " + choices_text(*s, ", ", " or ") + got;
    }
    case SettingType::Double: {
      char* end = nullptr;
      const double x = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end != '\0' || !(x >= s->dlo && x <= s->dhi))
        return key + ": expected " + range_text(*s) + got;
      s->set_d(cfg, x);
      return "";
    }
  }
  return "unknown kernel parameter '" + key + "'";
}

std::string setting_value(const Setting& s, const KernelConfig& cfg) {
  switch (s.type) {
    case SettingType::Bool: return s.get(cfg, s.arg) ? "true" : "false";
    case SettingType::Boot01: return s.get(cfg, s.arg) ? "1" : "0";
    case SettingType::Int:
      if (s.word && s.get(cfg, s.arg) == s.word_value) return s.word;
      return std::to_string(s.get(cfg, s.arg));
    case SettingType::Duration: return duration_text(s.get(cfg, s.arg));
    case SettingType::Enum: return s.choice(static_cast<int>(s.get(cfg, s.arg)));
    case SettingType::Double: return double_text(s.get_d(cfg));
  }
  return "";
}

std::string setting_default(const Setting& s) {
  if (s.default_note) return s.default_note;
  const std::string d = setting_value(s, default_config(KernelVersion::V7_0));
  std::string other;
  for (KernelVersion v : {KernelVersion::V6_12, KernelVersion::V6_18}) {
    const std::string dv = setting_value(s, default_config(v));
    if (dv != d) other += (other.empty() ? " (" : ", ") + std::string(version_name(v)) + ": " + dv;
  }
  return other.empty() ? d : d + other + ")";
}

std::string setting_values(const Setting& s) {
  switch (s.type) {
    case SettingType::Bool: return "true | false";
    case SettingType::Boot01: return "0 | 1";
    case SettingType::Int:
      return (s.range ? s.range : std::to_string(s.lo) + ".." + std::to_string(s.hi) + (s.unit ? std::string(" ") + s.unit : "")) +
             (s.word ? std::string(" | ") + s.word : "");
    case SettingType::Duration: return "a duration, " + duration_text(s.lo) + ".." + duration_text(s.hi);
    case SettingType::Enum: return choices_text(s, " | ", " | ");
    case SettingType::Double: return double_text(s.dlo) + ".." + double_text(s.dhi);
  }
  return "";
}

namespace {

// `text` folded into lines of at most `width` characters, each after `indent`.
std::string wrap(const std::string& text, size_t indent, size_t width) {
  std::string out, line;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t sp = text.find(' ', pos);
    if (sp == std::string::npos) sp = text.size();
    const std::string word = text.substr(pos, sp - pos);
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      out += std::string(indent, ' ') + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    pos = sp + 1;
  }
  if (!line.empty()) out += std::string(indent, ' ') + line + "\n";
  return out;
}

std::string pad(const std::string& s, size_t n) { return s.size() >= n ? s : s + std::string(n - s.size(), ' '); }

}  // namespace

std::string settings_text() {
  std::string out =
      "kernel settings (--set KEY=VALUE, or a scenario's [kernel] table): name, default of 7.0\n"
      "(other versions where they differ), then the values it takes and what it is:\n";
  out += "  " + pad("kernel", 31) + " 7.0\n" + wrap("6.12 | 6.18 | 7.0: the kernel version (--kernel)", 6, 100);
  for (const Setting& s : kernel_settings()) {
    out += "  " + pad(s.name, 31) + " " + setting_default(s) + "\n";
    if (*s.help) out += wrap(setting_values(s) + ": " + s.help, 6, 100);
  }
  return out;
}

std::string settings_markdown() {
  std::string out =
      "# KernelImpl settings\n"
      "\n"
      "Every setting of the simulated kernel, as `--set KEY=VALUE` or a scenario file's `[kernel]`\n"
      "table takes it. The default is 7.0's, with the versions whose default differs. Rules\n"
      "between settings (the HZ values a run takes, the preemption models and mm_cid\n"
      "implementations each version has, the fair server's runtime within its period, the grant\n"
      "length a design accepts) are checked when the run is built. This page is generated:\n"
      "\n"
      "    schedlab list settings --markdown > docs/settings.md\n"
      "\n"
      "| setting | values | default | what it is |\n"
      "|---|---|---|---|\n"
      "| `kernel` | 6.12 \\| 6.18 \\| 7.0 | 7.0 | the kernel version (`--kernel`) |\n";
  auto cell = [](std::string s) {
    std::string o;
    for (char c : s) o += c == '|' ? std::string("\\|") : std::string(1, c);
    return o;
  };
  for (const Setting& s : kernel_settings()) {
    const char* help = *s.help ? s.help : "scheduler feature flag (kernel/sched/features.h)";
    out += "| `" + std::string(s.name) + "` | " + cell(setting_values(s)) + " | " + cell(setting_default(s)) +
           " | " + cell(help) + " |\n";
  }
  return out;
}

}  // namespace kernel
