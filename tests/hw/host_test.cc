// Tests of the "host" machine read from /sys (hw/host.cc), on fake sysfs trees in a temp dir,
// and of the cpulist parser.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "hw/machine.h"
#include "hw/machine_internal.h"

namespace hw {
namespace {

namespace fs = std::filesystem;

// A fake /sys with devices/system/cpu filled by the test; removed afterwards.
class FakeSys : public ::testing::Test {
 protected:
  void SetUp() override {
    static int serial = 0;
    root_ = fs::temp_directory_path() /
            ("schedlab_fake_sys_" + std::to_string(getpid()) + "_" + std::to_string(serial++));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& rel, const std::string& text) {
    const fs::path p = root_ / "devices/system/cpu" / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  }
  // One CPU's topology files (and nothing about caches).
  void cpu(int c, int package, int core_id, const std::string& siblings) {
    const std::string d = "cpu" + std::to_string(c) + "/topology/";
    write(d + "physical_package_id", std::to_string(package));
    write(d + "core_id", std::to_string(core_id));
    write(d + "thread_siblings_list", siblings);
  }
  void cache(int c, int index, int level, const std::string& shared) {
    const std::string d = "cpu" + std::to_string(c) + "/cache/index" + std::to_string(index) + "/";
    write(d + "level", std::to_string(level));
    write(d + "shared_cpu_list", shared);
  }
  Machine read_ok() {
    Machine m;
    LoadResult r = read_host_machine(root_.string(), &m);
    EXPECT_TRUE(r.ok()) << r.error;
    return m;
  }

  fs::path root_;
};

// 2 packages x 2 cores x 2 threads, numbered like Linux on servers (siblings i and i+4),
// one L3 per package; L1 shared by the two threads of a core.
TEST_F(FakeSys, ReadsSocketsCoresSiblingsAndLlcs) {
  write("online", "0-7");
  for (int c = 0; c < 8; c++) {
    const int core = c % 4, package = core / 2;
    cpu(c, package, core % 2, std::to_string(core) + "," + std::to_string(core + 4));
    cache(c, 0, 1, std::to_string(core) + "," + std::to_string(core + 4));
    cache(c, 3, 3, package == 0 ? "0-1,4-5" : "2-3,6-7");
  }
  Machine m = read_ok();
  EXPECT_EQ(m.name, "host");
  EXPECT_EQ(m.topo.nr_cpus, 8);
  EXPECT_EQ(m.topo.nr_cores(), 4);
  EXPECT_EQ(m.topo.nr_llcs(), 2);
  EXPECT_EQ(m.topo.nr_sockets(), 2);
  EXPECT_EQ(m.topo.smt_sibling(1), 5);
  EXPECT_EQ(m.topo.llc_of[0], m.topo.llc_of[5]);
  EXPECT_NE(m.topo.llc_of[0], m.topo.llc_of[2]);
  EXPECT_NE(m.description.find("L3, 4 CPUs per LLC"), std::string::npos) << m.description;
  // Costs and the loop time come from the embedded machines/host.toml.
  Machine costs;
  ASSERT_TRUE(parse_costs_toml(embedded_profile("host"), "host.toml", &costs).ok());
  EXPECT_EQ(m.costs.hrtimer_program_ns, costs.costs.hrtimer_program_ns);
  EXPECT_EQ(m.cs_loop_3m_ns, costs.cs_loop_3m_ns);
}

// What some 2-vCPU Firecracker guests show: no cache entries at all.
TEST_F(FakeSys, WithoutCacheInfoEachCpuIsItsOwnLlc) {
  write("online", "0-1");
  cpu(0, 0, 0, "0");
  cpu(1, 0, 1, "1");
  Machine m = read_ok();
  EXPECT_EQ(m.topo.nr_cpus, 2);
  EXPECT_EQ(m.topo.nr_llcs(), 2);
  EXPECT_EQ(m.topo.nr_sockets(), 1);
  EXPECT_EQ(m.topo.smt_sibling(0), -1);
  EXPECT_EQ(m.line_transfer_ns(0, 1), m.costs.line_xllc_ns);
  EXPECT_NE(m.description.find("no cache information"), std::string::npos) << m.description;
}

TEST_F(FakeSys, OfflineCpusAreSkippedAndTheRestRenumbered) {
  write("online", "0,2-3");
  for (int c : {0, 1, 2, 3}) {
    cpu(c, 0, c, std::to_string(c));
    cache(c, 3, 3, "0-3");
  }
  Machine m = read_ok();
  EXPECT_EQ(m.topo.nr_cpus, 3);
  EXPECT_EQ(m.topo.nr_cores(), 3);
  EXPECT_EQ(m.topo.nr_llcs(), 1);
  EXPECT_NE(m.description.find("renumbered"), std::string::npos) << m.description;
}

TEST_F(FakeSys, UsesPossibleWhenOnlineIsMissingAndCoreIdWithoutSiblingLists) {
  write("possible", "0-3");
  for (int c = 0; c < 4; c++) {
    write("cpu" + std::to_string(c) + "/topology/physical_package_id", "0");
    write("cpu" + std::to_string(c) + "/topology/core_id", std::to_string(c / 2));
  }
  Machine m = read_ok();
  EXPECT_EQ(m.topo.nr_cpus, 4);
  EXPECT_EQ(m.topo.nr_cores(), 2);
  EXPECT_EQ(m.topo.smt_sibling(0), 1);
}

TEST_F(FakeSys, MissingTreeIsAnErrorNamingTheFile) {
  Machine m;
  LoadResult r = read_host_machine(root_.string(), &m);
  EXPECT_EQ(r.error, "machine 'host': cannot read " + (root_ / "devices/system/cpu/online").string() +
                         " nor possible");
}

TEST_F(FakeSys, MalformedCpuListIsAnError) {
  write("online", "0-x");
  Machine m;
  EXPECT_EQ(read_host_machine(root_.string(), &m).error,
            "machine 'host': malformed CPU list '0-x' in " + (root_ / "devices/system/cpu/online").string());
}

TEST_F(FakeSys, MoreThanTwoThreadsPerCoreIsRefused) {
  write("online", "0-3");
  for (int c = 0; c < 4; c++) cpu(c, 0, 0, "0-3");
  Machine m;
  EXPECT_EQ(read_host_machine(root_.string(), &m).error,
            "machine 'host': core of Linux CPU 2 has more than 2 hardware threads; schedlab models at most 2");
}

TEST(HostMachine, LoadsTheRunningHostFromSys) {
  if (!fs::exists("/sys/devices/system/cpu/online")) GTEST_SKIP() << "no /sys";
  Machine m;
  LoadResult r = load_machine("host", &m);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_GE(m.topo.nr_cpus, 1);
  EXPECT_EQ(m.name, "host");
}

}  // namespace
}  // namespace hw
