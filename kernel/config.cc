// Kernel configuration defaults per version, and parsing of configuration keys.
#include "kernel/config.h"

#include <cerrno>
#include <cstdlib>

#include "kernel/slice_ext.h"
#include "sim/parse.h"

namespace kernel {

namespace {

struct FeatDef {
  const char* name;
  bool enabled[3];  // per KernelVersion: 6.12, 6.18, 7.0
};
const FeatDef kFeats[] = {
#define SCHED_FEAT(name, v6_12, v6_18, v7_0) {#name, {v6_12, v6_18, v7_0}},
#include "kernel/sched/features.h"
#undef SCHED_FEAT
};

bool parse_bool(const std::string& v, bool* out) {
  if (v == "true" || v == "1" || v == "on" || v == "yes") return *out = true, true;
  if (v == "false" || v == "0" || v == "off" || v == "no") return *out = false, true;
  return false;
}

}  // namespace

bool parse_int(const std::string& v, long long* out) {
  if (v.empty()) return false;
  char* end = nullptr;
  errno = 0;
  *out = std::strtoll(v.c_str(), &end, 10);
  if (errno == ERANGE) return false;
  return *end == '\0';
}

int nr_sched_feats() { return __SCHED_FEAT_NR; }
const char* sched_feat_name(int bit) { return kFeats[bit].name; }

// Defaults per version: features from the table in kernel/sched/features.h; 6.12.0 normalized base slice 0.75 ms (0.70 ms from 6.15 and in
// 6.12.31+, commit 2ae891b82695); Kconfig default preemption NONE until 7.0, where x86
// offers only FULL and LAZY and defaults to LAZY (commit 7dadeaa6e851).
KernelConfig default_config(KernelVersion version) {
  KernelConfig c;
  c.version = version;
  c.features = 0;
  for (int i = 0; i < __SCHED_FEAT_NR; ++i)
    if (kFeats[i].enabled[static_cast<int>(version)]) c.features |= 1u << i;
  switch (version) {
    case KernelVersion::V6_12:
      c.base_slice_ns = 750000;
      c.preempt = PreemptModel::None;
      break;
    case KernelVersion::V6_18:
      c.base_slice_ns = 700000;
      c.preempt = PreemptModel::None;
      break;
    case KernelVersion::V7_0:
      c.base_slice_ns = 700000;
      c.preempt = PreemptModel::Lazy;
      break;
  }
  return c;
}

const char* version_name(KernelVersion v) {
  switch (v) {
    case KernelVersion::V6_12: return "6.12";
    case KernelVersion::V6_18: return "6.18";
    case KernelVersion::V7_0: return "7.0";
  }
  return "?";
}

const char* preempt_name(PreemptModel m) {
  switch (m) {
    case PreemptModel::None: return "none";
    case PreemptModel::Voluntary: return "voluntary";
    case PreemptModel::Full: return "full";
    case PreemptModel::Lazy: return "lazy";
  }
  return "?";
}

std::string parse_version(const std::string& s, KernelVersion* out) {
  if (s == "6.12") return *out = KernelVersion::V6_12, "";
  if (s == "6.18") return *out = KernelVersion::V6_18, "";
  if (s == "7.0") return *out = KernelVersion::V7_0, "";
  return "kernel: unknown version '" + s + "' (choose 6.12, 6.18 or 7.0)";
}

std::string parse_slice_ext_abi(const std::string& s, SliceExtAbi* out) {
  if (s == "none") return *out = SliceExtAbi::None, "";
  if (s == "rfc") return *out = SliceExtAbi::Rfc, "";
  if (s == "rseq2023") return *out = SliceExtAbi::Rseq2023, "";
  if (s == "mainline") return *out = SliceExtAbi::Mainline, "";
  return "slice_ext: unknown variant '" + s + "' (choose none, rfc, rseq2023, mainline)";
}

const char* slice_ext_abi_name(SliceExtAbi a) {
  switch (a) {
    case SliceExtAbi::None: return "none";
    case SliceExtAbi::Rfc: return "rfc";
    case SliceExtAbi::Rseq2023: return "rseq2023";
    case SliceExtAbi::Mainline: return "mainline";
  }
  return "?";
}

std::string parse_preempt(const std::string& s, PreemptModel* out) {
  if (s == "none") return *out = PreemptModel::None, "";
  if (s == "voluntary") return *out = PreemptModel::Voluntary, "";
  if (s == "full") return *out = PreemptModel::Full, "";
  if (s == "lazy") return *out = PreemptModel::Lazy, "";
  return "preempt: unknown model '" + s + "' (choose none, voluntary, full or lazy)";
}

std::string set_config_key(KernelConfig* cfg, const std::string& key, const std::string& value) {
  long long n = 0;
  if (key == "hz") {
    if (!parse_int(value, &n) || n < 1 || n > 100000) return "hz: not an integer from 1 to 100000: '" + value + "'";
    cfg->hz = static_cast<int>(n);
    return "";
  }
  if (key == "preempt") return parse_preempt(value, &cfg->preempt);
  if (key == "base_slice_ns") {
    if (!parse_int(value, &n) || n < 100000 || n > 100000000)
      return "base_slice_ns: must be an integer in 100000..100000000 (got '" + value + "')";
    cfg->base_slice_ns = n;
    return "";
  }
  if (key == "nohz_idle") {
    bool b;
    if (!parse_bool(value, &b)) return "nohz_idle: expected true or false (got '" + value + "')";
    cfg->nohz_idle = b;
    return "";
  }
  if (key == "skew_tick") {
    // The boot parameter is 0 or 1 (tick_setup_sched_timer() skews on any non-zero value,
    // but no other value means anything); true/false read as 1/0.
    bool b = false;
    if (!parse_bool(value, &b) || value == "on" || value == "off" || value == "yes" || value == "no")
      return "skew_tick: expected 0, 1, true or false (got '" + value + "')";
    cfg->skew_tick = b;
    return "";
  }
  if (key == "launcher") {
    if (value != "task" && value != "outside")
      return "launcher: expected task or outside (got '" + value + "')";
    cfg->launcher_task = value == "task";
    return "";
  }
  if (key == "migration_cost_ns") {
    if (!parse_int(value, &n) || n < 0 || n > 1000000000000LL)
      return "migration_cost_ns: must be an integer in 0..1000000000000 (got '" + value + "')";
    cfg->migration_cost_ns = n;
    return "";
  }
  if (key == "fair_server.runtime_ns" || key == "fair_server.period_ns") {
    const bool runtime = key == "fair_server.runtime_ns";
    // debugfs bounds: the period within 100 us .. 2^22 us (fair_server_period_min/max).
    if (!parse_int(value, &n) || n < (runtime ? 0 : 100000) || n > 4194304000LL)
      return key + ": must be an integer in " + (runtime ? "0" : "100000") +
             "..4194304000 ns (got '" + value + "')";
    (runtime ? cfg->fair_server_runtime_ns : cfg->fair_server_period_ns) = n;
    return "";
  }
  if (key == "rr_timeslice_ms") {
    if (!parse_int(value, &n) || n < 1 || n > 1000000)
      return "rr_timeslice_ms: must be an integer in 1..1000000 (got '" + value + "')";
    cfg->rr_timeslice_ms = static_cast<int>(n);
    return "";
  }
  if (key == "sched_autogroup_enabled") {
    // sysctl kernel.sched_autogroup_enabled: 0 or 1 (true/false read as 1/0).
    bool b;
    if (!parse_bool(value, &b)) return key + ": expected 0, 1, true or false (got '" + value + "')";
    cfg->sched_autogroup_enabled = b;
    return "";
  }
  if (key == "wakeup_pick_next_entity") {
    bool b;
    if (!parse_bool(value, &b)) return key + ": expected true or false (got '" + value + "')";
    cfg->wakeup_pick_next_entity = b;
    return "";
  }
  if (key == "slice_ext") return parse_slice_ext_abi(value, &cfg->slice_ext.abi);
  if (key == "slice_ext.nsec") {
    // A duration with its unit (5us, 50000ns). 0 is refused rather than read as "the
    // ABI's default": mainline's debugfs rseq/slice_ext_nsec refuses it (ERANGE), and for
    // the others a zero-length extension would silently be 50 us.
    int64_t ns = 0;
    if (!sim::parse_duration(value, &ns) || ns < 1 || ns > 1'000'000'000)
      return "slice_ext.nsec: expected a duration with its unit from 1ns to 1s, like 50us "
             "(mainline: 5us..50us) (got '" + value + "')";
    cfg->slice_ext.nsec = ns;
    return "";
  }
  if (key == "slice_ext.tick" || key == "slice_ext.fair_only" || key == "slice_ext.no_defer_rt" ||
      key == "slice_ext.lazy_remote" || key == "slice_ext.rseq_registered" ||
      key == "slice_ext.require_rseq_v2") {
    bool b;
    if (!parse_bool(value, &b)) return key + ": expected true or false (got '" + value + "')";
    if (key == "slice_ext.tick") cfg->slice_ext.tick = b;
    if (key == "slice_ext.fair_only") cfg->slice_ext.fair_only = b;
    if (key == "slice_ext.no_defer_rt") cfg->slice_ext.no_defer_rt = b;
    if (key == "slice_ext.lazy_remote") cfg->slice_ext.lazy_remote = b;
    if (key == "slice_ext.rseq_registered") cfg->slice_ext.rseq_registered = b;
    if (key == "slice_ext.require_rseq_v2") cfg->slice_ext.require_rseq_v2 = b;
    return "";
  }
  if (key == "slice_ext.rseq_len") {
    // sys_rseq() refuses less than ORIG_RSEQ_SIZE (EINVAL); no upper bound but the address space.
    if (!parse_int(value, &n) || n < 32 || n > 65536)
      return "slice_ext.rseq_len: must be an integer in 32..65536 (got '" + value + "')";
    cfg->slice_ext.rseq_len = static_cast<int>(n);
    return "";
  }
  if (key == "slice_ext.rseq_miss") {
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0' || !(v >= 0 && v <= 1))
      return "slice_ext.rseq_miss: expected a probability in 0..1 (got '" + value + "')";
    cfg->slice_ext.rseq_miss = v;
    return "";
  }
  if (key == "slice_ext.page_limit") {
    if (!parse_int(value, &n) || n < 0 || n > 1000000)
      return "slice_ext.page_limit: must be an integer in 0..1000000 (got '" + value + "')";
    cfg->slice_ext.page_limit = static_cast<int>(n);
    return "";
  }
  if (key == "mm_cid") {
    if (value == "default") return cfg->mm_cid = MmCid::Default, "";
    if (value == "off") return cfg->mm_cid = MmCid::Off, "";
    if (value == "lazy") return cfg->mm_cid = MmCid::Lazy, "";
    if (value == "batched") return cfg->mm_cid = MmCid::Batched, "";
    if (value == "owner") return cfg->mm_cid = MmCid::Owner, "";
    return "mm_cid: unknown implementation '" + value + "' (choose default, off, lazy, batched, owner)";
  }
  if (key == "mm_cid.scan_batch") {
    // CONFIG_RSEQ_CID_SCAN_BATCH: range 1..NR_CPUS (checked against the machine later).
    if (!parse_int(value, &n) || n < 1 || n > 1000000)
      return "mm_cid.scan_batch: must be an integer from 1 to the CPU count (got '" + value + "')";
    cfg->mm_cid_scan_batch = static_cast<int>(n);
    return "";
  }
  if (key.rfind("softirq.", 0) == 0) {
    bool* fields[] = {&cfg->softirq.ksoftirqd, &cfg->softirq.irq_time_accounting,
                      &cfg->softirq.threadirqs, &cfg->softirq.preempt_rt,
                      &cfg->softirq.latency_sensi_flag};
    const char* names[] = {"softirq.ksoftirqd", "softirq.irq_time_accounting",
                           "softirq.threadirqs", "softirq.preempt_rt", "softirq.latency_sensi_flag"};
    for (int i = 0; i < 5; ++i) {
      if (key != names[i]) continue;
      if (!parse_bool(value, fields[i])) return key + ": expected true or false (got '" + value + "')";
      return "";
    }
    return "unknown kernel parameter '" + key + "'";
  }
  const std::string prefix = "sched_feat.";
  if (key.rfind(prefix, 0) == 0) {
    const std::string name = key.substr(prefix.size());
    for (int i = 0; i < __SCHED_FEAT_NR; ++i) {
      if (name != kFeats[i].name) continue;
      bool b;
      if (!parse_bool(value, &b)) return key + ": expected true or false (got '" + value + "')";
      if (b)
        cfg->features |= 1u << i;
      else
        cfg->features &= ~(1u << i);
      return "";
    }
    return key + ": unknown scheduler feature '" + name + "'";
  }
  return "unknown kernel parameter '" + key + "'";
}

std::string validate_config(const KernelConfig& cfg) {
  if (cfg.hz != 100 && cfg.hz != 250 && cfg.hz != 300 && cfg.hz != 1000)
    return "hz: must be 100, 250, 300 or 1000 (got " + std::to_string(cfg.hz) + ")";
  if (cfg.version == KernelVersion::V6_12 && cfg.preempt == PreemptModel::Lazy)
    return "preempt: the lazy model does not exist in 6.12 (added in 6.13)";
  if (cfg.version == KernelVersion::V7_0 &&
      (cfg.preempt == PreemptModel::None || cfg.preempt == PreemptModel::Voluntary))
    return std::string("preempt: 7.0 on x86 offers only full and lazy (got ") +
           preempt_name(cfg.preempt) + ")";
  // ac8e69e69363 and 9f6d929ee2c6 went to 7.0.y and 6.18.y only: 6.12's
  // check_preempt_wakeup_fair() has no pick: step for them to change.
  if (cfg.version == KernelVersion::V6_12 && cfg.wakeup_pick_next_entity)
    return "wakeup_pick_next_entity: the fix (ac8e69e69363) was backported to 6.18.y and "
           "7.0.y, not 6.12; use kernel 6.18 or 7.0";
  if (cfg.fair_server_runtime_ns > cfg.fair_server_period_ns)
    return "fair_server.runtime_ns: must not exceed fair_server.period_ns (" +
           std::to_string(cfg.fair_server_runtime_ns) + " > " +
           std::to_string(cfg.fair_server_period_ns) + ")";
  // The design's bounds on the grant length (7.0: debugfs rseq/slice_ext_nsec, ERANGE outside).
  if (std::string e = slice_ext_check_nsec(slice_ext_select(cfg.slice_ext.abi), cfg.slice_ext.nsec);
      !e.empty())
    return e;
  // mm_cid: 6.4..6.18 have the lazy per-(mm, CPU) IDs with the 100 ms scan; the batched
  // series (v2, July 2025) patches that code as of 6.16 (with 6.14's max_nr_cid); 6.19
  // replaced both with per-task / per-CPU ownership (653fda7ae73d).
  const MmCid m = cfg.mm_cid;
  if (cfg.version == KernelVersion::V7_0 && (m == MmCid::Lazy || m == MmCid::Batched))
    return std::string("mm_cid: ") + mm_cid_name(m) +
           " does not exist in 7.0 (6.19 replaced the scan by owner)";
  if (cfg.version != KernelVersion::V7_0 && m == MmCid::Owner)
    return std::string("mm_cid: owner is the 6.19 rewrite; ") + version_name(cfg.version) +
           " has lazy";
  if (cfg.version == KernelVersion::V6_12 && m == MmCid::Batched)
    return "mm_cid: batched patches the 6.14+ allocator (max_nr_cid); use kernel 6.18, not 6.12";
  if (cfg.softirq.preempt_rt && cfg.preempt != PreemptModel::Full && cfg.preempt != PreemptModel::Lazy)
    return std::string("softirq.preempt_rt: PREEMPT_RT needs preempt full or lazy (got ") +
           preempt_name(cfg.preempt) + ")";
  return "";
}

MmCid mm_cid_effective(const KernelConfig& cfg) {
  if (cfg.mm_cid != MmCid::Default) return cfg.mm_cid;
  return cfg.version == KernelVersion::V7_0 ? MmCid::Owner : MmCid::Lazy;
}

const char* mm_cid_name(MmCid m) {
  switch (m) {
    case MmCid::Default: return "default";
    case MmCid::Off: return "off";
    case MmCid::Lazy: return "lazy";
    case MmCid::Batched: return "batched";
    case MmCid::Owner: return "owner";
  }
  return "?";
}

std::string validate_config_machine(const KernelConfig& cfg, int nr_cpus) {
  if (mm_cid_effective(cfg) == MmCid::Batched && cfg.mm_cid_scan_batch != 0 &&
      (cfg.mm_cid_scan_batch < 1 || cfg.mm_cid_scan_batch > nr_cpus))
    return "mm_cid.scan_batch: must be in 1.." + std::to_string(nr_cpus) +
           " (the machine's CPUs; got " + std::to_string(cfg.mm_cid_scan_batch) + ")";
  return "";
}

}  // namespace kernel
