// Kernel configuration defaults per version, and parsing of configuration keys.
#include "kernel/config.h"

#include <cerrno>
#include <cstdlib>
#include <iterator>

#include "kernel/slice_ext.h"

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
      c.idle_got_tick = true;
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
  std::string names;
  for (int i = 0; i < kNrSliceExtAbi; ++i) {
    const char* name = slice_ext_abi_name(static_cast<SliceExtAbi>(i));
    if (s == name) return *out = static_cast<SliceExtAbi>(i), "";
    names += (i ? ", " : "") + std::string(name);
  }
  return "slice_ext: unknown variant '" + s + "' (choose " + names + ")";
}

// The design's own name (kernel/slice_ext_designs.h registers it).
const char* slice_ext_abi_name(SliceExtAbi a) { return slice_ext_select(a)->name; }

std::string parse_preempt(const std::string& s, PreemptModel* out) {
  if (s == "none") return *out = PreemptModel::None, "";
  if (s == "voluntary") return *out = PreemptModel::Voluntary, "";
  if (s == "full") return *out = PreemptModel::Full, "";
  if (s == "lazy") return *out = PreemptModel::Lazy, "";
  return "preempt: unknown model '" + s + "' (choose none, voluntary, full or lazy)";
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
  static const char* const kNames[] = {
      "default",
      "off",
#define MM_CID_IMPL(Enum, name) #name,
#include "kernel/sched/mm_cid_impls.h"
#undef MM_CID_IMPL
  };
  static_assert(std::size(kNames) == kNrMmCid);
  return kNames[static_cast<int>(m)];
}

std::string validate_config_machine(const KernelConfig& cfg, int nr_cpus) {
  if (cfg.launcher_cpu >= nr_cpus)
    return "launcher_cpu: CPU " + std::to_string(cfg.launcher_cpu) + " does not exist (the machine has " +
           std::to_string(nr_cpus) + ")";
  if (mm_cid_effective(cfg) == MmCid::Batched && cfg.mm_cid_scan_batch != 0 &&
      (cfg.mm_cid_scan_batch < 1 || cfg.mm_cid_scan_batch > nr_cpus))
    return "mm_cid.scan_batch: must be in 1.." + std::to_string(nr_cpus) +
           " (the machine's CPUs; got " + std::to_string(cfg.mm_cid_scan_batch) + ")";
  return "";
}

}  // namespace kernel
