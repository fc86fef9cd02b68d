// Properties of the scheduling domains build_sched_domains() makes, on machines from 4 to
// 8192 CPUs, both SMT numberings, and the shapes that once crashed it (a domain with more
// than 255 groups): every CPU of a domain is in exactly one of its groups, the groups add up
// to the span, each group is the child domain's span of its CPUs, the local group is listed
// first, spans nest upwards, and all CPUs of a span agree on it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/kernel/harness.h"

namespace {

struct Shape {
  int sockets, cores_per_socket, threads, cores_per_llc;
  const char* numbering;
};

std::string describe(const Shape& s) {
  return std::to_string(s.sockets) + "x" + std::to_string(s.cores_per_socket) + "x" + std::to_string(s.threads) +
         " llc=" + std::to_string(s.cores_per_llc) + " " + s.numbering;
}

hw::Machine machine_of(const Shape& s) {
  const std::string text = "name = \"t\"\n[topology]\nsockets = " + std::to_string(s.sockets) +
                           "\ncores_per_socket = " + std::to_string(s.cores_per_socket) +
                           "\nthreads_per_core = " + std::to_string(s.threads) +
                           "\ncores_per_llc = " + std::to_string(s.cores_per_llc) + "\nsmt_numbering = \"" +
                           s.numbering + "\"\n";
  hw::Machine m;
  const hw::LoadResult r = hw::parse_machine_toml(text, "test", &m);
  EXPECT_TRUE(r.ok()) << r.error;
  return m;
}

// Checks the domains of every CPU (on machines above 1024 CPUs, of every CPU of a stride
// that meets every core, LLC and socket position, to bound the test's time); counts the
// (cpu, level) pairs checked in *checked.
void check_domains(const kernel::KernelImpl& k, size_t* checked) {
  const int n = k.nr_cpus();
  const int stride = n > 1024 ? 13 : 1;
  std::vector<int> seen(static_cast<size_t>(n), -1);  // per CPU: the last (cpu, level) that met it
  for (int cpu = 0; cpu < n; cpu += stride) {
    const auto& sds = k.cpu_rq(cpu).sd;
    // The CPU's sd_llc (update_top_cache_domain()) is its highest domain sharing the LLC.
    const kernel::sched_domain* llc = nullptr;
    for (const kernel::sched_domain& sd : sds)
      if (sd.share_llc) llc = &sd;
    EXPECT_EQ(k.cpu_rq(cpu).sd_llc, llc) << "cpu " << cpu;
    EXPECT_EQ(k.cpu_rq(cpu).sd_llc_size, llc ? llc->span_weight : 1) << "cpu " << cpu;
    for (size_t l = 0; l < sds.size(); ++l) {
      const kernel::sched_domain& sd = sds[l];
      const std::string where = "cpu " + std::to_string(cpu) + " level " + sd.name;
      EXPECT_EQ(sd.span_weight, static_cast<int>(sd.span.size())) << where;
      EXPECT_TRUE(std::binary_search(sd.span.begin(), sd.span.end(), cpu)) << where;
      EXPECT_GE(sd.groups.size(), 2u) << where << ": a one-group domain is degenerate";
      EXPECT_EQ(sd.local, 0u) << where;
      ASSERT_FALSE(sd.groups.empty()) << where;
      EXPECT_TRUE(std::binary_search(sd.groups[0].begin(), sd.groups[0].end(), cpu)) << where;
      ASSERT_EQ(sd.group_sum.size(), sd.groups.size()) << where;
      ASSERT_EQ(sd.group_cores.size(), sd.groups.size()) << where;
      const int tag = cpu * 8 + static_cast<int>(l);
      size_t total = 0;
      for (const std::span<const int> g : sd.groups) {
        ASSERT_FALSE(g.empty()) << where;
        total += g.size();
        for (int c : g) {
          ASSERT_TRUE(std::binary_search(sd.span.begin(), sd.span.end(), c)) << where << ": cpu " << c;
          ASSERT_NE(seen[static_cast<size_t>(c)], tag) << where << ": cpu " << c << " in two groups";
          seen[static_cast<size_t>(c)] = tag;
        }
        // A group is the span of the child domain of its CPUs (or the CPU itself at the bottom).
        if (l > 0) {
          EXPECT_TRUE(std::ranges::equal(k.cpu_rq(g.front()).sd[l - 1].span, g)) << where;
        } else {
          // The bottom level's groups are single CPUs or SMT siblings (a degenerate child).
          EXPECT_LE(g.size(), 2u) << where;
        }
      }
      EXPECT_EQ(total, sd.span.size()) << where << ": groups do not add up to the span";
      if (l > 0) {
        const auto& child = sds[l - 1].span;
        EXPECT_TRUE(std::includes(sd.span.begin(), sd.span.end(), child.begin(), child.end())) << where;
        EXPECT_GT(sd.span.size(), child.size()) << where;
      }
      // Every CPU of the span builds the same domain at this level.
      const int other = sd.span[sd.span.size() / 2];
      bool found = false;
      for (const auto& o : k.cpu_rq(other).sd)
        if (std::ranges::equal(o.span, sd.span)) found = true;
      EXPECT_TRUE(found) << where << ": cpu " << other << " has no domain with the same span";
      ++*checked;
    }
  }
}

class Topologies : public ::testing::TestWithParam<Shape> {};

TEST_P(Topologies, EveryCpuIsInExactlyOneGroupPerLevelAndGroupsAddUpToTheSpan) {
  const Shape s = GetParam();
  SCOPED_TRACE(describe(s));
  const hw::Machine m = machine_of(s);
  testing_support::Sim sim(m);
  size_t checked = 0;
  check_domains(*sim.k, &checked);
  EXPECT_GT(checked, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Topologies,
    ::testing::Values(Shape{1, 4, 1, 4, "split"}, Shape{1, 4, 2, 2, "adjacent"}, Shape{2, 8, 2, 4, "split"},
                      Shape{2, 96, 2, 8, "split"},     // genoa
                      Shape{2, 129, 2, 129, "split"},  // a socket of 258 CPUs: 129 core groups
                      Shape{1, 300, 1, 300, "split"},  // one LLC of 300 cores: 300 groups
                      Shape{1, 300, 2, 300, "adjacent"}, Shape{4, 64, 2, 16, "adjacent"},
                      Shape{8, 128, 1, 8, "split"},     // 1024 CPUs, NUMA level of 8 sockets
                      Shape{2, 1024, 2, 16, "split"},   // 4096
                      Shape{2, 2048, 2, 16, "split"},   // 8192, the documented limit
                      Shape{16, 256, 2, 8, "split"}),   // 8192 as synth:16x256x2: 16 nodes
    [](const ::testing::TestParamInfo<Shape>& info) {
      const Shape& s = info.param;
      return std::to_string(s.sockets) + "x" + std::to_string(s.cores_per_socket) + "x" + std::to_string(s.threads) +
             "_llc" + std::to_string(s.cores_per_llc) + "_" + s.numbering;
    });

// The shape that crashed: a socket level with more than 255 groups once listed a group twice
// and took front() of the moved-from copy. A short run on it completes.
TEST(Topologies, AHogRunsOnASocketOf258Cpus) {
  const hw::Machine m = machine_of(Shape{2, 129, 2, 129, "split"});
  testing_support::Sim sim(m);
  for (int i = 0; i < 4; ++i)
    sim.spawn(kernel::TaskAttr{}, [](user::Thread& t) -> user::Program {
      for (;;) co_await t.compute(1000000000);
    });
  sim.run(20 * sim::kNsecPerMsec);
  testing_support::check_invariants(*sim.k, 20 * sim::kNsecPerMsec);
}

// Linux allocates one sched_group per child span and links it into the domain of every CPU
// that spans it (get_group()); the domains' spans are shared alike. Here a span's CPUs are
// stored once, so an 8192-CPU machine's domains take memory linear in its CPUs: every CPU of
// a span points at the same CPUs, and a group is the child domain's span itself.
TEST(Topologies, TheCpusOfASpanShareItsGroupsAndSpanStorage) {
  hw::Machine m;
  ASSERT_TRUE(hw::load_machine("synth:16x256x2", &m).ok());
  testing_support::Sim sim(m);
  const kernel::KernelImpl& k = *sim.k;
  ASSERT_EQ(k.nr_cpus(), 8192);
  for (int cpu : {0, 1, 255, 4096, 4097, 8191}) {
    const auto& sds = k.cpu_rq(cpu).sd;
    ASSERT_EQ(sds.size(), 4u) << "cpu " << cpu;  // SMT, MC, PKG, NUMA
    for (size_t l = 0; l < sds.size(); ++l) {
      const kernel::sched_domain& sd = sds[l];
      const int other = sd.span.back() == cpu ? sd.span.front() : sd.span.back();
      EXPECT_EQ(k.cpu_rq(other).sd[l].span.data(), sd.span.data()) << "cpu " << cpu << " " << sd.name;
      for (const std::span<const int> g : sd.groups) {
        if (l == 0) continue;  // single CPUs
        EXPECT_EQ(k.cpu_rq(g.front()).sd[l - 1].span.data(), g.data()) << "cpu " << cpu << " " << sd.name;
      }
    }
  }
}

// A domain's group list (groups, group_sum, group_cores) is stored once for every CPU that
// meets the groups in the same order: on genoa (siblings numbered 192 apart) the CPUs of one
// child span (a core's two threads for MC, an LLC's 16 for PKG, a node's 192 for NUMA) share
// it, so a balance reads lists the other CPUs of the span keep in the cache.
TEST(Topologies, TheCpusOfAChildSpanShareTheirDomainsGroupList) {
  hw::Machine m;
  ASSERT_TRUE(hw::load_machine("genoa", &m).ok());
  testing_support::Sim sim(m);
  const kernel::KernelImpl& k = *sim.k;
  for (int cpu = 0; cpu < k.nr_cpus(); ++cpu) {
    const auto& sds = k.cpu_rq(cpu).sd;
    ASSERT_EQ(sds.size(), 4u);
    for (size_t l = 1; l < sds.size(); ++l) {
      const kernel::sched_domain& first = k.cpu_rq(sds[l - 1].span.front()).sd[l];
      EXPECT_EQ(sds[l].groups.data(), first.groups.data()) << "cpu " << cpu << " " << sds[l].name;
      EXPECT_EQ(sds[l].group_sum.data(), first.group_sum.data()) << "cpu " << cpu << " " << sds[l].name;
      EXPECT_EQ(sds[l].group_cores.data(), first.group_cores.data()) << "cpu " << cpu << " " << sds[l].name;
    }
  }
  // SMT: 384 lists (each CPU first); MC: one per core (192); PKG: one per LLC (24); NUMA: 2.
  EXPECT_EQ(k.sd_group_lists.size(), 384u + 192u + 24u + 2u);
}

}  // namespace
