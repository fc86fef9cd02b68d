// Golden results: short runs that exercise every scheduler path the proposals touch give the
// same JSON as the files under tests/golden/. A change to the model's behaviour shows up
// here as a diff; if the change is intended, regenerate with
//   SCHEDLAB_UPDATE_GOLDEN=1 ctest --test-dir build -R Golden
// and commit the new files with the change that explains them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace {

struct Case {
  const char* name;
  std::vector<std::string> args;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"locktable-vm50-none",
       {"run", "locktable", "--machine", "vm50", "--duration", "60ms", "--set", "clients=40",
        "--set", "hogs=52"}},
      {"locktable-vm50-rfc",
       {"run", "locktable", "--machine", "vm50", "--duration", "60ms", "--set", "clients=40",
        "--set", "hogs=52", "--set", "ext=rfc"}},
      {"locktable-vm50-mainline",
       {"run", "locktable", "--machine", "vm50", "--duration", "60ms", "--set", "clients=40",
        "--set", "hogs=52", "--set", "ext=mainline"}},
      {"oltp-genoa48",
       {"run", "oltp", "--machine", "genoa", "--cpus", "48", "--duration", "30ms", "--set",
        "clients=60", "--set", "hogs=8"}},
      {"extend-sched2-small4-6.12",
       {"run", "extend-sched2", "--machine", "small4", "--kernel", "6.12", "--duration",
        "200ms", "--set", "threads=4", "--set", "hogs=4", "--set", "ext=rseq2023"}},
      {"wakeup-latency-vm50-fifo",
       {"run", "wakeup-latency", "--machine", "vm50", "--duration", "100ms", "--set",
        "hogs=60"}},
  };
  return c;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// The first line where a and b differ, for the failure message.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ea = !std::getline(sa, la), eb = !std::getline(sb, lb);
    if (ea && eb) return "no difference";
    if (ea != eb || la != lb)
      return "line " + std::to_string(line) + ": golden '" + (ea ? "<end>" : la) + "', now '" +
             (eb ? "<end>" : lb) + "'";
  }
}

class Golden : public ::testing::TestWithParam<Case> {};

TEST_P(Golden, ResultsEqualTheStoredJson) {
  const Case& c = GetParam();
  const char* src = std::getenv("SCHEDLAB_SOURCE_DIR");
  const std::string golden = std::string(src ? src : ".") + "/tests/golden/" + c.name + ".json";
  const std::string out =
      ::testing::TempDir() + "schedlab_golden_" + std::to_string(getpid()) + "_" + c.name + ".json";
  std::vector<std::string> args = c.args;
  args.push_back("--json");
  args.push_back(out);
  ::testing::internal::CaptureStdout();
  const int rc = cli::main_with_args(args);
  ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0);
  const std::string now = read_file(out);
  std::remove(out.c_str());
  ASSERT_FALSE(now.empty());
  if (std::getenv("SCHEDLAB_UPDATE_GOLDEN")) {
    std::ofstream(golden, std::ios::binary) << now;
    GTEST_SKIP() << "wrote " << golden;
  }
  const std::string want = read_file(golden);
  ASSERT_FALSE(want.empty()) << "missing " << golden << " (SCHEDLAB_UPDATE_GOLDEN=1 writes it)";
  EXPECT_TRUE(now == want) << c.name << ": " << first_difference(want, now);
}

INSTANTIATE_TEST_SUITE_P(Runs, Golden, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           std::string n = i.param.name;
                           for (char& ch : n)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
