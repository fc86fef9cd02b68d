// Every file in tests/fuzz/regressions/ (an input the fuzzer once crashed or hung on) goes
// through fuzz::run_input, the fuzz target's entry point, and must come back: in the
// sanitizer build a memory error or undefined behaviour fails the test. The seed shapes of
// the input format (scenario, machine, --set parts) are checked to reach a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"

namespace {

std::filesystem::path source_dir() {
  const char* d = std::getenv("SCHEDLAB_SOURCE_DIR");
  return d ? d : ".";
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(FuzzReplay, EveryRegressionInputReturns) {
  const std::filesystem::path dir = source_dir() / "tests/fuzz/regressions";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator(dir))
    if (f.is_regular_file() && f.path().filename() != "README.md") files.push_back(f.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) GTEST_SKIP() << "no regression inputs in " << dir.string();
  for (const auto& f : files) {
    SCOPED_TRACE(f.filename().string());
    const fuzz::Result r = fuzz::run_input(read(f));
    // A rejection must be the CLI's one-line error.
    if (r.outcome == fuzz::Outcome::kRejected) {
      EXPECT_FALSE(r.error.empty());
      EXPECT_EQ(r.error.find('\n'), std::string::npos) << r.error;
    }
  }
}

TEST(FuzzReplay, InputPartsReachTheCliPaths) {
  // A scenario part alone.
  EXPECT_EQ(fuzz::run_input("workload = \"spinlock\"\nmachine = \"small4\"\n").outcome,
            fuzz::Outcome::kRan);
  // A machine file part: the machine comes from it.
  const std::string machine = read(source_dir() / "machines/small4.toml");
  fuzz::Result r = fuzz::run_input("%%machine\n" + machine);
  EXPECT_EQ(r.outcome, fuzz::Outcome::kRan) << r.error;
  r = fuzz::run_input("%%machine\n[topology]\nsockets = 0\n");
  EXPECT_EQ(r.outcome, fuzz::Outcome::kRejected);
  EXPECT_NE(r.error.find("topology."), std::string::npos) << r.error;
  // --set lines and an --also.
  r = fuzz::run_input("%%set\nmachine=small4\nworkload=spinlock\nhz=250\n+wakeup-latency\n");
  EXPECT_EQ(r.outcome, fuzz::Outcome::kRan) << r.error;
  r = fuzz::run_input("%%set\nhz=7\n");
  EXPECT_EQ(r.outcome, fuzz::Outcome::kRejected);
  EXPECT_NE(r.error.find("hz"), std::string::npos) << r.error;
  // Bad TOML in the scenario part: the parser's error, not a crash.
  EXPECT_EQ(fuzz::run_input("[kernel\n").outcome, fuzz::Outcome::kRejected);
}

}  // namespace
