// Scheduling domains built from the machine topology, mirroring kernel/sched/topology.c
// (sd_init, degenerate levels) and the x86 levels SMT -> MC (LLC) -> PKG -> NUMA.
#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <utility>

#include "kernel/kernel_impl.h"
#include "kernel/sched/fair_balance.h"
#include "kernel/sched/sched.h"

namespace kernel {

namespace {

// Per id of one topology level (core, LLC, socket, or the whole machine), its CPUs ascending:
// the span of every domain of that level, computed once instead of per CPU.
std::vector<std::vector<int>> spans_by_id(const std::vector<int>& id_of) {
  std::vector<std::vector<int>> spans(static_cast<size_t>(*std::max_element(id_of.begin(), id_of.end()) + 1));
  for (int c = 0; c < static_cast<int>(id_of.size()); ++c) spans[static_cast<size_t>(id_of[c])].push_back(c);
  return spans;
}

// One sched_group of a domain, shared by every CPU whose domain at that level has the span
// (get_group(): Linux allocates one per child span and links it into each of them).
struct shared_group {
  int child_id;                // the child level's id of its CPUs
  std::span<const int> cpus;   // ascending
  const lb_sum* sum;           // KernelImpl::lb_sums of exactly these CPUs, or nullptr
                               // (one CPU, or levels that do not nest here)
  int cores;                   // sched_group::cores
};

}  // namespace

// build_sched_domains(): per CPU, bottom-up; a level spanning the same CPUs as its child
// (or a single CPU) is degenerate and dropped, as sd_degenerate()/sd_parent_degenerate() do.
void build_sched_domains(KernelImpl* k) {
  const hw::Topology& t = k->machine_.topo;
  const int n = t.nr_cpus;
  std::vector<int> cpu_id(n), all(n, 0);
  for (int c = 0; c < n; ++c) cpu_id[c] = c;
  // The group sums (simulator-only, see KernelImpl::lb_sums): per core, LLC and socket, from
  // lb_view as it is now; each CPU counts in the three that hold it. A group of one CPU
  // has no sum: it reads the CPU's lb_view entry, which is what the sum would hold.
  const std::vector<int>* kinds[4] = {&cpu_id, &t.core_of, &t.llc_of, &t.socket_of};
  std::vector<size_t> cpus_with[4];  // per kind and id: how many CPUs have that id
  for (int kind = 0; kind < 4; ++kind) {
    const std::vector<int>& id = *kinds[kind];
    const size_t ids = static_cast<size_t>(*std::max_element(id.begin(), id.end()) + 1);
    k->lb_sums[kind].assign(kind ? ids : 0, lb_sum{});
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
  // has_idle_cores as the idle loop's first __update_idle_core() leaves it: every core idle.
  k->llc_has_idle_cores.assign(k->llc_nr_idle_scan.size(), 1);
  for (int c = 0; c < n; ++c) {
    const lb_cpu& v = k->lb_view[c];
    for (int kind = 1; kind < 4; ++kind) {
      lb_sum* s = &k->lb_sums[kind][static_cast<size_t>((*kinds[kind])[c])];
      k->lb_sums_of[c][static_cast<size_t>(kind - 1)] = s;
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
  // Every span once (KernelImpl::sd_spans): the domains' of each level, and the groups'
  // that are not a child span (where levels do not nest). The inner vectors never move, so
  // the std::spans into them stay valid.
  for (int li = 0; li < 4; ++li) k->sd_spans[li] = spans_by_id(*levels[li].id);
  k->sd_group_parts.clear();
  // Per level and domain id, its groups in ascending order of their first CPU: the span split
  // by the child level's id (one pass over the span), each group with its sum and cores.
  std::vector<std::vector<shared_group>> groups_of[4];
  std::vector<int> slot[4];  // per child kind and id: the group's index while splitting, or -1
  for (int kind = 0; kind < 4; ++kind) slot[kind].assign(cpus_with[kind].size(), -1);
  for (int li = 0; li < 4; ++li) {
    const Level& l = levels[li];
    const std::vector<int>& child = *kinds[l.child];
    groups_of[li].resize(k->sd_spans[li].size());
    for (size_t id = 0; id < k->sd_spans[li].size(); ++id) {
      const std::vector<int>& span = k->sd_spans[li][id];
      std::vector<std::vector<int>> parts;
      for (int c : span) {
        int& g = slot[l.child][static_cast<size_t>(child[c])];
        if (g < 0) {
          g = static_cast<int>(parts.size());
          parts.emplace_back();
        }
        parts[static_cast<size_t>(g)].push_back(c);
      }
      std::vector<shared_group>& gs = groups_of[li][id];
      gs.reserve(parts.size());
      for (std::vector<int>& part : parts) {
        const int cid = child[part.front()];
        slot[l.child][static_cast<size_t>(cid)] = -1;
        int cores = 0;  // init_sched_groups_capacity(): one per SMT mask in the group
        for (int c : part) cores += first_of_core[static_cast<size_t>(c)];
        // The sum is the group's only if every CPU with this id is in the group (levels
        // nest, as on real machines); otherwise update_sg_lb_stats() adds up the CPUs.
        const bool whole = cpus_with[l.child][static_cast<size_t>(cid)] == part.size();
        std::span<const int> cpus;
        if (!whole) {
          k->sd_group_parts.push_back(std::move(part));
          cpus = k->sd_group_parts.back();
        } else if (l.child == 0) {
          cpus = std::span<const int>(&k->all_cpus[static_cast<size_t>(cid)], 1);
        } else {
          cpus = k->sd_spans[l.child - 1][static_cast<size_t>(cid)];
        }
        gs.push_back({cid, cpus, whole && l.child ? &k->lb_sums[l.child][static_cast<size_t>(cid)] : nullptr, cores});
      }
    }
  }
  std::vector<std::pair<int64_t, size_t>> met;
  k->sd_group_lists.clear();
  // Per level and domain id: the group lists built so far, by the order of their groups.
  std::vector<std::map<std::vector<size_t>, const KernelImpl::sd_group_list*>> lists_of[4];
  for (int li = 0; li < 4; ++li) lists_of[li].resize(k->sd_spans[li].size());
  std::vector<size_t> order;
  for (int cpu = 0; cpu < n; ++cpu) {
    rq* rq = k->rq_of(cpu);
    rq->sd.clear();
    size_t prev_weight = 1;
    for (size_t li = 0; li < std::size(levels); ++li) {
      const Level& l = levels[li];
      const size_t id = static_cast<size_t>((*l.id)[cpu]);
      const std::vector<int>& span = k->sd_spans[li][id];
      if (span.size() <= prev_weight) continue;  // degenerate
      sched_domain sd;
      sd.name = l.name;
      sd.level = static_cast<int>(rq->sd.size());
      sd.span_weight = static_cast<int>(span.size());
      // Groups are the spans of the child level (cores, LLCs, sockets); a degenerate child
      // level gives the same groups as the one below it. They are listed as
      // build_sched_groups() links them for `cpu`'s domain: in the order
      // for_each_cpu_wrap(i, span, cpu) first meets them, so the local group comes first and
      // the rest follow from cpu on, wrapping. Balancing and fork placement walk this list,
      // and on ties keep the group met first. The wrap meets a group first at its lowest CPU
      // >= cpu, or, if it has none, at its lowest CPU after wrapping past the end of the span.
      const std::vector<shared_group>& gs = groups_of[li][id];
      const int64_t wrap = static_cast<int64_t>(span.back()) + 1;
      met.resize(gs.size());
      for (size_t g = 0; g < gs.size(); ++g) {
        const std::span<const int> cpus = gs[g].cpus;
        auto it = std::lower_bound(cpus.begin(), cpus.end(), cpu);
        met[g] = {it != cpus.end() ? *it : cpus.front() + wrap, g};
      }
      std::sort(met.begin(), met.end());
      const int child_id = (*kinds[l.child])[cpu];
      order.clear();
      for (size_t i = 0; i < met.size(); ++i) {
        order.push_back(met[i].second);
        if (gs[met[i].second].child_id == child_id) sd.local = i;
      }
      const KernelImpl::sd_group_list*& list = lists_of[li][id][order];
      if (!list) {
        auto made = std::make_unique<KernelImpl::sd_group_list>();
        made->groups.reserve(gs.size());
        made->sum.reserve(gs.size());
        made->cores.reserve(gs.size());
        for (size_t g : order) {
          made->groups.push_back(gs[g].cpus);
          made->sum.push_back(gs[g].sum);
          made->cores.push_back(gs[g].cores);
        }
        list = made.get();
        k->sd_group_lists.push_back(std::move(made));
      }
      sd.groups = list->groups;
      sd.group_sum = list->sum;
      sd.group_cores = list->cores;
      // A group's flags are its child domain's: SMT cores share capacity.
      sd.groups_share_capacity = !rq->sd.empty() && rq->sd.back().share_cpucapacity;
      sd.span = span;
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
      prev_weight = span.size();
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
    sd_idle_next_balance_update(rq);
    // update_top_cache_domain(): the highest domain sharing the LLC and its size, kept per
    // CPU so that wakeups do not walk the domains for them.
    rq->sd_llc = nullptr;
    rq->sd_llc_size = 1;
    for (const sched_domain& sd : rq->sd)
      if (sd.share_llc) {
        rq->sd_llc = &sd;
        rq->sd_llc_size = sd.span_weight;
      }
  }
}

}  // namespace kernel
