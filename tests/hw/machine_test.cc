// Tests of the built-in machine profiles, TOML parsing and its errors, line-transfer tiers,
// load_machine and --cpus restriction (hw/machine.h).
#include "hw/machine.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hw/machine_internal.h"

namespace hw {
namespace {

Machine load(const std::string& name) {
  Machine m;
  LoadResult r = load_machine(name, &m);
  EXPECT_TRUE(r.ok()) << r.error;
  return m;
}

// Parses `text` as "foo.toml" and returns the error ("" on success).
std::string parse_error(const std::string& text) {
  Machine m;
  return parse_machine_toml(text, "foo.toml", &m).error;
}

const char* kMinimal = "[topology]\nsockets = 1\ncores_per_socket = 4\n";

TEST(Machine, GenoaHas384CpusIn24LlcsOf16) {
  Machine m = load("genoa");
  EXPECT_EQ(m.name, "genoa");
  EXPECT_EQ(m.topo.nr_cpus, 384);
  EXPECT_EQ(m.topo.nr_cores(), 192);
  EXPECT_EQ(m.topo.nr_llcs(), 24);
  EXPECT_EQ(m.topo.nr_sockets(), 2);
  std::vector<int> llc_size(24, 0);
  for (int cpu = 0; cpu < 384; cpu++) llc_size[m.topo.llc_of[cpu]]++;
  for (int n : llc_size) EXPECT_EQ(n, 16);
}

TEST(Machine, GenoaNumbersSiblingsIAndIPlus192AsLinuxDoes) {
  Machine m = load("genoa");
  EXPECT_EQ(m.topo.smt_sibling(0), 192);
  EXPECT_EQ(m.topo.smt_sibling(192), 0);
  EXPECT_EQ(m.topo.smt_sibling(191), 383);
  // First threads: socket 0 cores, then socket 1 cores; siblings follow in the same order.
  EXPECT_EQ(m.topo.socket_of[95], 0);
  EXPECT_EQ(m.topo.socket_of[96], 1);
  EXPECT_EQ(m.topo.socket_of[287], 0);
  EXPECT_EQ(m.topo.socket_of[288], 1);
}

TEST(Machine, GenoaCcxHoldsEightCoresAndTheirSiblings) {
  Machine m = load("genoa");
  const int llc = m.topo.llc_of[0];
  for (int cpu : {1, 7, 192, 199}) EXPECT_EQ(m.topo.llc_of[cpu], llc) << cpu;
  for (int cpu : {8, 200, 96}) EXPECT_NE(m.topo.llc_of[cpu], llc) << cpu;
}

// The extend-sched2 VM: 50 cores with 2 hardware threads each (the report's `avg reqs` is its
// `Ran for` over _SC_NPROCESSORS_CONF = 100), numbered as QEMU/KVM numbers a guest's threads.
TEST(Machine, Vm100IsFiftyCoresOfTwoAdjacentThreadsInOneLlcWithHaltIdle) {
  Machine m = load("vm100");
  EXPECT_EQ(m.topo.nr_cpus, 100);
  EXPECT_EQ(m.topo.nr_cores(), 50);
  EXPECT_EQ(m.topo.nr_llcs(), 1);
  EXPECT_EQ(m.topo.nr_sockets(), 1);
  EXPECT_EQ(m.topo.smt_sibling(0), 1);
  EXPECT_EQ(m.topo.smt_sibling(99), 98);
  EXPECT_FALSE(m.costs.idle_polling);
  // A busy sibling slows the critical section, and a sibling sees a released lock first.
  EXPECT_GT(m.costs.smt_slowdown_permille, 1000);
  EXPECT_LT(m.costs.line_smt_ns, m.costs.line_llc_ns);
  EXPECT_EQ(m.cs_loop_3m_ns, load("vm50").cs_loop_3m_ns);
}

TEST(Machine, Vm50IsOneSocketOneLlcWithoutSmtAndHaltIdle) {
  Machine m = load("vm50");
  EXPECT_EQ(m.topo.nr_cpus, 50);
  EXPECT_EQ(m.topo.nr_cores(), 50);
  EXPECT_EQ(m.topo.nr_llcs(), 1);
  EXPECT_EQ(m.topo.nr_sockets(), 1);
  EXPECT_EQ(m.topo.smt_sibling(0), -1);
  EXPECT_FALSE(m.costs.idle_polling);
  // A guest pays a VM exit to program its timer, a bare-metal core does not.
  EXPECT_GT(m.costs.hrtimer_program_ns, load("genoa").costs.hrtimer_program_ns);
}

TEST(Machine, Small4IsFourCpusInOneLlcWithoutSmt) {
  Machine m = load("small4");
  EXPECT_EQ(m.topo.nr_cpus, 4);
  EXPECT_EQ(m.topo.nr_llcs(), 1);
  EXPECT_EQ(m.topo.nr_sockets(), 1);
  for (int cpu = 0; cpu < 4; cpu++) EXPECT_EQ(m.topo.smt_sibling(cpu), -1);
}

TEST(Machine, LineTransferCostGrowsWithDistance) {
  Machine m = load("genoa");
  const Costs& c = m.costs;
  EXPECT_EQ(m.line_transfer_ns(5, 5), 0);
  EXPECT_EQ(m.line_transfer_ns(0, 192), c.line_smt_ns);
  EXPECT_EQ(m.line_transfer_ns(0, 1), c.line_llc_ns);
  EXPECT_EQ(m.line_transfer_ns(0, 193), c.line_llc_ns);
  EXPECT_EQ(m.line_transfer_ns(0, 8), c.line_xllc_ns);
  EXPECT_EQ(m.line_transfer_ns(0, 96), c.line_xsocket_ns);
  EXPECT_EQ(m.line_transfer_ns(96, 0), c.line_xsocket_ns);
  EXPECT_LT(c.line_smt_ns, c.line_llc_ns);
  EXPECT_LT(c.line_llc_ns, c.line_xllc_ns);
  EXPECT_LT(c.line_xllc_ns, c.line_xsocket_ns);
}

TEST(Machine, AdjacentNumberingMakesSiblingsOf2iAnd2iPlus1) {
  Machine m;
  ASSERT_TRUE(parse_machine_toml("[topology]\nsockets = 1\ncores_per_socket = 4\nthreads_per_core = 2\n"
                                 "cores_per_llc = 2\nsmt_numbering = \"adjacent\"\n",
                                 "adj.toml", &m).ok());
  EXPECT_EQ(m.topo.nr_cpus, 8);
  EXPECT_EQ(m.topo.smt_sibling(0), 1);
  EXPECT_EQ(m.topo.smt_sibling(5), 4);
  EXPECT_EQ(m.topo.llc_of[3], 0);
  EXPECT_EQ(m.topo.llc_of[4], 1);
}

TEST(Machine, BuiltInsAreGenoaHostSmall4AndVm50) {
  EXPECT_EQ(builtin_machines(), (std::vector<std::string>{"genoa", "host", "small4", "vm100", "vm50"}));
}

// The policy of machines/*.toml: no cost silently falls back to a default, and each value
// carries a comment with its source or the word "estimate".
TEST(Machine, EveryBuiltInProfileSetsEveryCostWithAComment) {
  for (int i = 0; i < kNrEmbeddedProfiles; i++) {
    std::istringstream in(kEmbeddedProfiles[i].text);
    std::string line;
    bool in_costs = false;
    std::vector<std::string> seen;
    while (std::getline(in, line)) {
      if (!line.empty() && line[0] == '[') in_costs = line == "[costs]";
      const size_t eq = line.find(" = ");
      if (!in_costs || eq == std::string::npos || line[0] == '#') continue;
      seen.push_back(line.substr(0, eq));
      EXPECT_NE(line.find('#'), std::string::npos) << kEmbeddedProfiles[i].name << ": " << line;
    }
    for (const std::string& key : cost_keys()) {
      EXPECT_NE(std::find(seen.begin(), seen.end(), key), seen.end())
          << kEmbeddedProfiles[i].name << " lacks costs." << key;
    }
  }
}

// The CPU-count sweep profiles (machines/xeon128, xeon1024, epyc2048.toml; files, not
// built-ins) load with the topology Linux would build and set every cost with a comment.
TEST(Machine, SweepProfilesHave128_1024And2048CpusWithSmtAndTheirLlcs) {
  const char* src = std::getenv("SCHEDLAB_SOURCE_DIR");
  if (src == nullptr) GTEST_SKIP() << "SCHEDLAB_SOURCE_DIR not set";
  struct Want { const char* name; int cpus, sockets, llcs; };
  for (const Want& w : {Want{"xeon128", 128, 2, 2}, Want{"xeon1024", 1024, 16, 16},
                        Want{"epyc2048", 2048, 8, 64}}) {
    SCOPED_TRACE(w.name);
    const std::string path = std::string(src) + "/machines/" + w.name + ".toml";
    Machine m = load(path);
    EXPECT_EQ(m.topo.nr_cpus, w.cpus);
    EXPECT_EQ(m.topo.nr_llcs(), w.llcs);
    EXPECT_EQ(*std::max_element(m.topo.socket_of.begin(), m.topo.socket_of.end()) + 1, w.sockets);
    EXPECT_EQ(m.topo.core_of[static_cast<size_t>(w.cpus / 2)], 0);  // split SMT numbering
    std::ifstream f(path);
    std::string line;
    bool in_costs = false;
    int costs = 0;
    while (std::getline(f, line)) {
      if (!line.empty() && line[0] == '[') in_costs = line == "[costs]";
      if (!in_costs || line.find(" = ") == std::string::npos || line[0] == '#') continue;
      ++costs;
      EXPECT_NE(line.find('#'), std::string::npos) << line;
    }
    EXPECT_EQ(costs, static_cast<int>(cost_keys().size()));
  }
}

// Guards the build: the embedded copies must be the files in machines/ (SCHEDLAB_SOURCE_DIR
// is set by schedlab_test()).
TEST(Machine, EmbeddedProfilesAreTheFilesInMachinesDir) {
  const char* src = std::getenv("SCHEDLAB_SOURCE_DIR");
  if (src == nullptr) GTEST_SKIP() << "SCHEDLAB_SOURCE_DIR not set";
  for (const std::string& name : builtin_machines()) {
    std::ifstream f(std::string(src) + "/machines/" + name + ".toml");
    std::stringstream text;
    text << f.rdbuf();
    EXPECT_EQ(text.str(), embedded_profile(name)) << name;
  }
}

TEST(MachineToml, MissingKeysFallBackToTheStructDefaults) {
  Machine m;
  ASSERT_TRUE(parse_machine_toml(std::string(kMinimal) + "[costs]\nipi_send_ns = 7\n", "dir/foo.toml", &m).ok());
  EXPECT_EQ(m.name, "foo");  // named after the file when `name` is absent
  EXPECT_EQ(m.topo.nr_cpus, 4);
  EXPECT_EQ(m.topo.nr_llcs(), 1);  // cores_per_llc defaults to the socket
  EXPECT_EQ(m.costs.ipi_send_ns, 7);
  EXPECT_EQ(m.costs.context_switch_ns, Costs{}.context_switch_ns);
  EXPECT_EQ(m.cs_loop_3m_ns, Machine{}.cs_loop_3m_ns);
}

TEST(MachineToml, ZeroSocketsIsAnErrorNamingTheParameterAndFile) {
  EXPECT_EQ(parse_error("[topology]\nsockets = 0\ncores_per_socket = 4\n"),
            "machine 'foo.toml': topology.sockets must be >= 1 (got 0)");
}

TEST(MachineToml, UnknownKeysAreErrors) {
  EXPECT_EQ(parse_error(std::string(kMinimal) + "[costs]\nipi_sned_ns = 5\n"),
            "machine 'foo.toml': unknown key 'costs.ipi_sned_ns'");
  EXPECT_EQ(parse_error(std::string("colour = 1\n") + kMinimal), "machine 'foo.toml': unknown key 'colour'");
  EXPECT_EQ(parse_error("[topology]\nsockets = 1\ncores_per_socket = 4\nsmt = 2\n"),
            "machine 'foo.toml': unknown key 'topology.smt'");
}

TEST(MachineToml, NegativeCostIsAnError) {
  EXPECT_EQ(parse_error(std::string(kMinimal) + "[costs]\nttwu_ns = -1\n"),
            "machine 'foo.toml': costs.ttwu_ns must be >= 0 (got -1)");
}

TEST(MachineToml, SmtSlowdownMustBeBetween1000And4000) {
  EXPECT_EQ(parse_error(std::string(kMinimal) + "[costs]\nsmt_slowdown_permille = 999\n"),
            "machine 'foo.toml': costs.smt_slowdown_permille must be >= 1000 (got 999)");
  EXPECT_EQ(parse_error(std::string(kMinimal) + "[costs]\nsmt_slowdown_permille = 4001\n"),
            "machine 'foo.toml': costs.smt_slowdown_permille must be <= 4000 (got 4001)");
}

TEST(MachineToml, BackgroundWakeupsMustBeBetween0And100000) {
  EXPECT_EQ(parse_error(std::string(kMinimal) + "[costs]\nbackground_wakeups_per_s = -1\n"),
            "machine 'foo.toml': costs.background_wakeups_per_s must be >= 0 (got -1)");
  EXPECT_EQ(parse_error(std::string(kMinimal) + "[costs]\nbackground_wakeups_per_s = 100001\n"),
            "machine 'foo.toml': costs.background_wakeups_per_s must be <= 100000 (got 100001)");
}

TEST(MachineToml, WrongTypesAreNamed) {
  EXPECT_EQ(parse_error("[topology]\nsockets = \"2\"\ncores_per_socket = 4\n"),
            "machine 'foo.toml': topology.sockets must be an integer (got a string)");
  EXPECT_EQ(parse_error(std::string(kMinimal) + "[costs]\nidle_polling = 1\n"),
            "machine 'foo.toml': costs.idle_polling must be a boolean (got an integer)");
  EXPECT_EQ(parse_error(std::string(kMinimal) + "[costs]\nttwu_ns = 1.5\n"),
            "machine 'foo.toml': costs.ttwu_ns must be an integer (got a float)");
}

TEST(MachineToml, MalformedTomlGivesLineAndColumnOnOneLine) {
  const std::string e = parse_error("[topology]\nsockets = = 2\n");
  EXPECT_EQ(e.rfind("machine 'foo.toml': malformed TOML at line 2, column ", 0), 0u) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(MachineToml, TopologyShapeIsChecked) {
  EXPECT_EQ(parse_error("name = \"x\"\n"), "machine 'foo.toml': missing table [topology]");
  EXPECT_EQ(parse_error("[topology]\nsockets = 1\n"), "machine 'foo.toml': topology.cores_per_socket is required");
  EXPECT_EQ(parse_error("[topology]\nsockets = 1\ncores_per_socket = 12\ncores_per_llc = 5\n"),
            "machine 'foo.toml': topology.cores_per_llc must divide topology.cores_per_socket (got 5 and 12)");
  EXPECT_EQ(parse_error("[topology]\nsockets = 1\ncores_per_socket = 4\nthreads_per_core = 4\n"),
            "machine 'foo.toml': topology.threads_per_core must be <= 2 (got 4)");
  EXPECT_EQ(parse_error("[topology]\nsockets = 1\ncores_per_socket = 4\nsmt_numbering = \"odd\"\n"),
            "machine 'foo.toml': topology.smt_numbering must be \"split\" or \"adjacent\" (got \"odd\")");
  EXPECT_EQ(parse_error("[topology]\nsockets = 8\ncores_per_socket = 1024\nthreads_per_core = 2\n"),
            "machine 'foo.toml': topology has 16384 CPUs, more than the limit of 8192");
}

TEST(MachineToml, HostCostsFileHasNoTopologyAndIsNotAFullProfile) {
  Machine m;
  EXPECT_EQ(parse_machine_toml(embedded_profile("host"), "host.toml", &m).error,
            "machine 'host.toml': missing table [topology]");
  EXPECT_TRUE(parse_costs_toml(embedded_profile("host"), "host.toml", &m).ok());
  EXPECT_EQ(parse_costs_toml(kMinimal, "x.toml", &m).error,
            "machine 'x.toml': topology is not allowed here: the host's topology is read from /sys");
}

TEST(LoadMachine, UnknownNameFailsListingTheBuiltIns) {
  Machine m;
  EXPECT_EQ(load_machine("genoa2", &m).error,
            "machine 'genoa2': no such built-in profile (genoa, host, small4, vm100, vm50) or file");
}

TEST(LoadMachine, ReadsAProfileFromAPath) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("schedlab_hw_" + std::to_string(getpid()) + "_tiny.toml")).string();
  std::ofstream(path) << kMinimal << "[costs]\nline_llc_ns = 33\n";
  Machine m;
  LoadResult r = load_machine(path, &m);
  std::filesystem::remove(path);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(m.name, "schedlab_hw_" + std::to_string(getpid()) + "_tiny");
  EXPECT_EQ(m.costs.line_llc_ns, 33);
}

TEST(LoadMachine, ErrorsInAFileNameTheFile) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("schedlab_hw_" + std::to_string(getpid()) + "_bad.toml")).string();
  std::ofstream(path) << "[topology]\nsockets = 0\ncores_per_socket = 4\n";
  Machine m;
  LoadResult r = load_machine(path, &m);
  std::filesystem::remove(path);
  EXPECT_EQ(r.error, "machine '" + path + "': topology.sockets must be >= 1 (got 0)");
}

TEST(RestrictCpus, KeepsTheFirstNCpusWithDenseIds) {
  Machine m = load("genoa");
  ASSERT_TRUE(restrict_cpus(&m, 20).ok());
  EXPECT_EQ(m.topo.nr_cpus, 20);
  EXPECT_EQ(m.topo.core_of.size(), 20u);
  EXPECT_EQ(m.topo.nr_cores(), 20);
  EXPECT_EQ(m.topo.nr_llcs(), 3);  // CCXs of cores 0-7, 8-15 and 16-19
  EXPECT_EQ(m.topo.nr_sockets(), 1);
  EXPECT_EQ(m.topo.smt_sibling(0), -1);  // cpu 192 is gone
  EXPECT_EQ(m.name, "genoa");
}

TEST(RestrictCpus, KeepsSiblingsThatAreBothInside) {
  Machine m = load("genoa");
  ASSERT_TRUE(restrict_cpus(&m, 200).ok());
  EXPECT_EQ(m.topo.nr_cores(), 192);
  EXPECT_EQ(m.topo.smt_sibling(7), 199);
  EXPECT_EQ(m.topo.smt_sibling(199), 7);
  EXPECT_EQ(m.topo.smt_sibling(8), -1);
}

TEST(RestrictCpus, RejectsZeroAndMoreCpusThanTheMachineHas) {
  Machine m = load("small4");
  EXPECT_EQ(restrict_cpus(&m, 0).error, "--cpus must be between 1 and 4 (the CPUs of machine 'small4'), got 0");
  EXPECT_EQ(restrict_cpus(&m, 5).error, "--cpus must be between 1 and 4 (the CPUs of machine 'small4'), got 5");
  EXPECT_TRUE(restrict_cpus(&m, 4).ok());
  EXPECT_EQ(m.topo.nr_cpus, 4);
}

TEST(SynthMachine, GeneratesSocketsOfLlcsOfSmtCoresWithGenoasCosts) {
  Machine m = load("synth:16x256x2");
  EXPECT_EQ(m.name, "synth:16x256x2");
  EXPECT_EQ(m.topo.nr_cpus, 8192);
  EXPECT_EQ(m.topo.nr_cores(), 4096);
  EXPECT_EQ(m.topo.nr_llcs(), 512);  // 8 cores (16 CPUs) per LLC by default
  EXPECT_EQ(m.topo.nr_sockets(), 16);
  EXPECT_EQ(m.topo.smt_sibling(5), 5 + 4096);  // split numbering, as genoa
  EXPECT_EQ(m.topo.llc_of[4096 + 7], m.topo.llc_of[7]);
  EXPECT_NE(m.topo.llc_of[8], m.topo.llc_of[7]);
  EXPECT_EQ(m.topo.socket_of[255], 0);
  EXPECT_EQ(m.topo.socket_of[256], 1);
  // Every cost is genoa's, and genoa's are not just the defaults.
  const Costs genoa = load("genoa").costs;
  int differ_from_default = 0;
  for (const CostSetting& c : cost_settings()) {
    EXPECT_EQ(c.get(m.costs), c.get(genoa)) << c.key;
    differ_from_default += c.get(genoa) != c.get(Costs{});
  }
  EXPECT_GT(differ_from_default, 0);
  const Machine l = load("synth:2x12x1:llc=6");
  EXPECT_EQ(l.topo.nr_cpus, 24);
  EXPECT_EQ(l.topo.nr_llcs(), 4);
  EXPECT_EQ(l.topo.smt_sibling(0), -1);
  EXPECT_EQ(load("synth:1x4x2").topo.nr_llcs(), 1);  // fewer than 8 cores: one LLC
}

TEST(SynthMachine, BadNamesAreRefusedNamingTheValue) {
  Machine m;
  EXPECT_EQ(load_machine("synth:2x12", &m).error,
            "machine 'synth:2x12': expected synth:SOCKETSxCORESxSMT[:llc=CORES]");
  EXPECT_EQ(load_machine("synth:0x12x2", &m).error,
            "machine 'synth:0x12x2': expected synth:SOCKETSxCORESxSMT[:llc=CORES]");
  EXPECT_EQ(load_machine("synth:2x12x2x", &m).error,
            "machine 'synth:2x12x2x': expected synth:SOCKETSxCORESxSMT[:llc=CORES]");
  EXPECT_EQ(load_machine("synth:2x12x3", &m).error, "machine 'synth:2x12x3': SMT must be 1 or 2 (got 3)");
  EXPECT_EQ(load_machine("synth:2x12x2:llc=5", &m).error,
            "machine 'synth:2x12x2:llc=5': llc=5 must divide the 12 cores per socket");
  EXPECT_EQ(load_machine("synth:2x12x2:llc=x", &m).error,
            "machine 'synth:2x12x2:llc=x': llc must be a count of cores (got 'x')");
  EXPECT_EQ(load_machine("synth:2x12x2:l3=4", &m).error,
            "machine 'synth:2x12x2:l3=4': expected synth:SOCKETSxCORESxSMT[:llc=CORES] (unknown option 'l3=4')");
  EXPECT_EQ(load_machine("synth:16x512x2", &m).error,
            "machine 'synth:16x512x2': 16384 CPUs, more than the limit of 8192");
  EXPECT_EQ(load_machine("synth:8192x8192x2", &m).error,
            "machine 'synth:8192x8192x2': 134217728 CPUs, more than the limit of 8192");
}

}  // namespace
}  // namespace hw
