// Scheduling domains built from the machine topology, mirroring kernel/sched/topology.c
// (sd_init, degenerate levels) and the x86 levels SMT -> MC (LLC) -> PKG -> NUMA.
#include <algorithm>

#include "kernel/kernel.h"
#include "kernel/sched/sched.h"

namespace kernel {

namespace {

// CPUs whose `id_of` equals that of `cpu`.
std::vector<int> span_of(const std::vector<int>& id_of, int cpu) {
  std::vector<int> span;
  for (int c = 0; c < static_cast<int>(id_of.size()); ++c)
    if (id_of[c] == id_of[cpu]) span.push_back(c);
  return span;
}

// Splits `span` into groups by `child_id` (the child level's id), each group's CPUs
// ascending. The groups are listed as build_sched_groups() links them for `cpu`'s domain:
// in the order for_each_cpu_wrap(i, span, cpu) first meets them, so the local group comes
// first and the rest follow from cpu on, wrapping. Balancing and fork placement walk this
// list, and on ties keep the group met first.
std::vector<std::vector<int>> groups_of(const std::vector<int>& span, const std::vector<int>& child_id, int cpu) {
  std::vector<std::vector<int>> groups;
  std::vector<int> ids;
  for (int c : span) {
    auto it = std::find(ids.begin(), ids.end(), child_id[c]);
    if (it == ids.end()) {
      ids.push_back(child_id[c]);
      groups.push_back({c});
    } else {
      groups[it - ids.begin()].push_back(c);
    }
  }
  const size_t start = static_cast<size_t>(std::lower_bound(span.begin(), span.end(), cpu) - span.begin());
  std::vector<std::vector<int>> ordered;
  std::vector<bool> listed(groups.size(), false);
  for (size_t j = 0; j < span.size(); ++j) {
    const int c = span[(start + j) % span.size()];
    const size_t g = static_cast<size_t>(std::find(ids.begin(), ids.end(), child_id[c]) - ids.begin());
    if (!listed[g]) {
      listed[g] = true;
      ordered.push_back(std::move(groups[g]));
    }
  }
  return ordered;
}

}  // namespace

// build_sched_domains(): per CPU, bottom-up; a level spanning the same CPUs as its child
// (or a single CPU) is degenerate and dropped, as sd_degenerate()/sd_parent_degenerate() do.
void build_sched_domains(Kernel* k) {
  const hw::Topology& t = k->machine_.topo;
  const int n = t.nr_cpus;
  std::vector<int> cpu_id(n), all(n, 0);
  for (int c = 0; c < n; ++c) cpu_id[c] = c;
  // The group sums (simulator-only, see Kernel::lb_sums): per CPU, core, LLC and socket,
  // from lb_view as it is now; each CPU counts in the four that hold it.
  const std::vector<int>* kinds[4] = {&cpu_id, &t.core_of, &t.llc_of, &t.socket_of};
  std::vector<size_t> cpus_with[4];  // per kind and id: how many CPUs have that id
  for (int kind = 0; kind < 4; ++kind) {
    const std::vector<int>& id = *kinds[kind];
    const size_t ids = static_cast<size_t>(*std::max_element(id.begin(), id.end()) + 1);
    k->lb_sums[kind].assign(ids, lb_sum{});
    cpus_with[kind].assign(ids, 0);
    for (int i : id) cpus_with[kind][static_cast<size_t>(i)]++;
  }
  k->lb_sums_of.assign(static_cast<size_t>(n), {});
  // sd_llc_shared->nr_idle_scan per LLC, as periodic balancing leaves it on an idle machine
  // (utilisation 0: scan the whole LLC). Linux starts a new domain at 0 (no scan) until its
  // first balance, but a run here models a machine that was up and idle before it started.
  k->all_cpus.resize(static_cast<size_t>(k->nr_cpus()));
  for (int c = 0; c < k->nr_cpus(); ++c) k->all_cpus[static_cast<size_t>(c)] = c;
  k->distribute_cpu_mask_prev.assign(static_cast<size_t>(k->nr_cpus()), 0);
  k->llc_nr_idle_scan.assign(static_cast<size_t>(*std::max_element(t.llc_of.begin(), t.llc_of.end()) + 1), 0);
  for (int c = 0; c < n; ++c) k->llc_nr_idle_scan[static_cast<size_t>(t.llc_of[c])]++;
  for (int c = 0; c < n; ++c) {
    const lb_cpu& v = k->lb_view[c];
    for (int kind = 0; kind < 4; ++kind) {
      lb_sum* s = &k->lb_sums[kind][static_cast<size_t>((*kinds[kind])[c])];
      k->lb_sums_of[c][kind] = s;
      s->add(v);
    }
  }
  struct Level {
    const char* name;
    const std::vector<int>* id;
    int child;  // kinds[] index of the child level: its spans are this level's groups
    int imbalance_pct;
    int cache_nice_tries;
    bool share_llc;
    bool share_cpucapacity;  // SD_SHARE_CPUCAPACITY: SMT
    bool numa;               // SD_NUMA
  };
  const Level levels[] = {
      {"SMT", &t.core_of, 0, 110, 0, true, true, false},
      {"MC", &t.llc_of, 1, 117, 1, true, false, false},
      {"PKG", &t.socket_of, 2, 117, 1, false, false, false},
      {"NUMA", &all, 3, 117, 2, false, false, true},
  };
  std::vector<uint8_t> first_of_core(static_cast<size_t>(n), 0);  // lowest CPU of its core
  {
    std::vector<uint8_t> seen(static_cast<size_t>(*std::max_element(t.core_of.begin(), t.core_of.end()) + 1), 0);
    for (int c = 0; c < n; ++c)
      if (!seen[static_cast<size_t>(t.core_of[c])]) {
        seen[static_cast<size_t>(t.core_of[c])] = 1;
        first_of_core[static_cast<size_t>(c)] = 1;
      }
  }
  for (int cpu = 0; cpu < n; ++cpu) {
    rq* rq = k->rq_of(cpu);
    rq->sd.clear();
    size_t prev_weight = 1;
    for (const Level& l : levels) {
      std::vector<int> span = span_of(*l.id, cpu);
      if (span.size() <= prev_weight) continue;  // degenerate
      sched_domain sd;
      sd.name = l.name;
      sd.level = static_cast<int>(rq->sd.size());
      sd.span_weight = static_cast<int>(span.size());
      // Groups are the spans of the child level (cores, LLCs, sockets); a degenerate child
      // level gives the same groups as the one below it.
      const std::vector<int>& child = *kinds[l.child];
      sd.groups = groups_of(span, child, cpu);
      for (size_t g = 0; g < sd.groups.size(); ++g) {
        const int id = child[sd.groups[g].front()];
        // The sum is the group's only if every CPU with this id is in the group (levels
        // nest, as on real machines); otherwise update_sg_lb_stats() adds up the CPUs.
        const bool whole = cpus_with[l.child][static_cast<size_t>(id)] == sd.groups[g].size();
        sd.group_sum.push_back(whole ? &k->lb_sums[l.child][static_cast<size_t>(id)] : nullptr);
        if (id == child[cpu]) sd.local = g;
        int cores = 0;  // init_sched_groups_capacity(): one per SMT mask in the group
        for (int c : sd.groups[g]) cores += first_of_core[static_cast<size_t>(c)];
        sd.group_cores.push_back(cores);
      }
      // A group's flags are its child domain's: SMT cores share capacity.
      sd.groups_share_capacity = !rq->sd.empty() && rq->sd.back().share_cpucapacity;
      sd.span = std::move(span);
      sd.imbalance_pct = l.imbalance_pct;
      sd.cache_nice_tries = l.cache_nice_tries;
      sd.share_llc = l.share_llc;
      sd.share_cpucapacity = l.share_cpucapacity;
      // The local group's flags are the child domain's (sg->flags): every level but NUMA
      // has SD_PREFER_SIBLING. The bottom level has no child: Linux destroyed the degenerate
      // one-CPU level below it and cleared its groups' flags (cpu_attach_domain()).
      sd.prefer_sibling = !rq->sd.empty() && !rq->sd.back().numa;
      sd.min_interval = sd.span_weight;
      sd.max_interval = 2 * sd.span_weight;
      sd.balance_interval = sd.span_weight;
      sd.numa = l.numa;
      prev_weight = sd.span.size();
      rq->sd.push_back(std::move(sd));
    }
    // imb_numa_nr (build_sched_domains()): the first level above the LLC allows an imbalance
    // of one task per LLC it holds (12.5% of it if it is one LLC); the levels above scale it
    // by their span over the first NUMA level's.
    int imb = 0, imb_span = 1;
    for (size_t i = 1; i < rq->sd.size(); ++i) {
      sched_domain& sd = rq->sd[i];
      const sched_domain& child = rq->sd[i - 1];
      if (!sd.share_llc && child.share_llc) {
        const int nr_llcs = sd.span_weight / child.span_weight;
        imb = std::max(1, nr_llcs == 1 ? sd.span_weight >> 3 : nr_llcs);
        sd.imb_numa_nr = imb;
        imb_span = sd.span_weight;
        for (size_t j = i + 1; j < rq->sd.size(); ++j)
          if (rq->sd[j].numa) {
            imb_span = rq->sd[j].span_weight;
            break;
          }
      } else if (imb) {
        sd.imb_numa_nr = imb * std::max(1, sd.span_weight / imb_span);
      }
    }
  }
}

}  // namespace kernel
