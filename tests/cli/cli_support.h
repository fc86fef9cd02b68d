// Helpers the command-line tests share: run the CLI in-process with its output captured,
// temporary paths, the source directory, and the bad-input check (one line, exit 2, no file).
#pragma once
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/cli.h"

namespace cli_test_support {


inline std::string tmp_path(const std::string& name) {
  return ::testing::TempDir() + "schedlab_cli_" + std::to_string(getpid()) + "_" + name;
}

inline bool exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

inline std::string source_dir() {
  const char* d = std::getenv("SCHEDLAB_SOURCE_DIR");
  return d ? d : ".";
}

inline int run_cli(std::vector<std::string> args, std::string* err = nullptr) {
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  const int rc = cli::main_with_args(args);
  ::testing::internal::GetCapturedStdout();
  const std::string e = ::testing::internal::GetCapturedStderr();
  if (err) *err = e;
  return rc;
}

inline void expect_bad_input(std::vector<std::string> args, const std::string& names) {
  const std::string json = tmp_path("bad.json");
  args.push_back("--json");
  args.push_back(json);
  std::string err;
  EXPECT_EQ(run_cli(args, &err), 2) << names;
  EXPECT_NE(err.find(names), std::string::npos) << "stderr: " << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_FALSE(exists(json));
}

inline std::string stdout_of(const std::vector<std::string>& args, int* rc = nullptr) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int code = cli::main_with_args(args);
  ::testing::internal::GetCapturedStderr();
  if (rc) *rc = code;
  return ::testing::internal::GetCapturedStdout();
}

}  // namespace cli_test_support
