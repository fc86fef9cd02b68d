// `schedlab compare --mpi` in the process itself (the two-rank run is the CTest
// Mpi.TwoRanksWriteTheLocalComparisonByteForByteAndBadInputOnce), and `schedlab list machines`.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "scenario/compare_mpi.h"

namespace {

int run_cli(const std::vector<std::string>& args, std::string* out, std::string* err) {
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  const int rc = cli::main_with_args(args);
  *out = ::testing::internal::GetCapturedStdout();
  *err = ::testing::internal::GetCapturedStderr();
  return rc;
}

std::string tmp_path(const std::string& name) {
  return ::testing::TempDir() + "schedlab_mpi_" + std::to_string(getpid()) + "_" + name;
}

const std::vector<std::string> kCompare = {"compare", "spinlock", "--machine", "small4", "--duration",
                                           "10ms", "--vary", "hz=250,1000", "--seeds", "2"};

// Environment variables set for one test and removed after it.
struct Env {
  std::vector<std::string> names;
  void set(const char* name, const char* value) {
    setenv(name, value, 1);
    names.push_back(name);
  }
  ~Env() {
    for (const std::string& n : names) unsetenv(n.c_str());
  }
};

TEST(CompareMpi, AsOneOfSeveralProcessesOfAnMpiJobWithoutMpiItRefusesNamingMpi) {
  Env env;
  env.set("OMPI_COMM_WORLD_SIZE", "2");
  env.set("OMPI_COMM_WORLD_RANK", "0");
  std::vector<std::string> args = kCompare;
  const std::string json = tmp_path("refused.json");
  args.insert(args.end(), {"--json", json});
  std::string out, err;
  EXPECT_EQ(run_cli(args, &out, &err), 2);
  EXPECT_NE(err.find("--mpi"), std::string::npos) << err;
  EXPECT_NE(err.find("one of 2 processes"), std::string::npos) << err;
  EXPECT_EQ(access(json.c_str(), F_OK), -1);
}

TEST(CompareMpi, ACompareErrorIsPrintedByRankZeroOnly) {
  std::vector<std::string> args = kCompare;
  args.push_back("--bogus");
  std::string out, err;
  {
    Env env;
    env.set("PMI_RANK", "1");
    EXPECT_EQ(run_cli(args, &out, &err), 2);
    EXPECT_EQ(err, "");
  }
  {
    Env env;
    env.set("PMI_RANK", "0");
    EXPECT_EQ(run_cli(args, &out, &err), 2);
    EXPECT_NE(err.find("--bogus"), std::string::npos) << err;
  }
  // Other commands than compare print their own errors on every rank.
  Env env;
  env.set("SLURM_PROCID", "3");
  EXPECT_EQ(run_cli({"run", "--bogus"}, &out, &err), 2);
  EXPECT_NE(err.find("--bogus"), std::string::npos) << err;
}

TEST(CompareMpi, ABuildWithoutMpiSaysSoWhenMpiIsAskedFor) {
  if (scenario::mpi_built()) GTEST_SKIP() << "this build has MPI";
  std::vector<std::string> args = kCompare;
  args.push_back("--mpi");
  std::string out, err;
  EXPECT_EQ(run_cli(args, &out, &err), 2);
  EXPECT_NE(err.find("--mpi: this schedlab was built without MPI"), std::string::npos) << err;
  EXPECT_EQ(out, "");
}

TEST(ListMachines, ExplainsHowToNameAGeneratedMachineWithAnExample) {
  std::string out, err;
  ASSERT_EQ(run_cli({"list", "machines"}, &out, &err), 0) << err;
  EXPECT_NE(out.find("genoa"), std::string::npos) << out;
  EXPECT_NE(out.find("synth:SOCKETSxCORESxSMT[:llc=CORES]"), std::string::npos) << out;
  EXPECT_NE(out.find("--machine synth:8x128x2 (2048 CPUs)"), std::string::npos) << out;
  EXPECT_EQ(out.find("kernel settings"), std::string::npos) << "only the machines: " << out;
  std::string all;
  ASSERT_EQ(run_cli({"list"}, &all, &err), 0);
  EXPECT_NE(all.find(out), std::string::npos) << "`list` shows the same machines";
}

TEST(ListMachines, TheHelpOfMachineNamesTheGeneratedMachinesWithAnExample) {
  for (const char* cmd : {"run", "compare"}) {
    std::string out, err;
    ASSERT_EQ(run_cli({cmd, "--help"}, &out, &err), 0);
    EXPECT_NE(out.find("synth:SOCKETSxCORESxSMT[:llc=CORES] (e.g. synth:8x128x2, 2048 CPUs; see schedlab "
                       "list machines)"),
              std::string::npos)
        << cmd << ": " << out;
  }
}

}  // namespace
