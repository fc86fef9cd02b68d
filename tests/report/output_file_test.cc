// report/output_file: the atomic writer every output goes through. A file appears whole or
// not at all; every failure names the path; "-", FIFOs, /dev/stdout and symlinks behave as
// a shell redirection would.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "report/output_file.h"

namespace report {
namespace {

namespace fs = std::filesystem;

// ---- write_file_atomic ----

// A fresh directory under the system temp dir, removed (made writable first) afterwards.
class WriteFile : public ::testing::Test {
 protected:
  void SetUp() override {
    static int serial = 0;
    dir_ = fs::temp_directory_path() /
           ("schedlab_report_test_" + std::to_string(getpid()) + "_" + std::to_string(serial++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(dir_);
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  size_t entries() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }
  fs::path dir_;
};

TEST_F(WriteFile, WritesTheTextAndLeavesNoTemporary) {
  const std::string path = (dir_ / "out.json").string();
  std::string error = "stale";
  ASSERT_TRUE(write_file_atomic(path, "hello\n", &error)) << error;
  EXPECT_EQ(error, "");
  EXPECT_EQ(read(path), "hello\n");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(WriteFile, ReplacesAnExistingFileWhole) {
  const std::string path = (dir_ / "out.json").string();
  ASSERT_TRUE(write_file_atomic(path, std::string(10000, 'x'), nullptr));
  ASSERT_TRUE(write_file_atomic(path, "short\n", nullptr));
  EXPECT_EQ(read(path), "short\n");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(WriteFile, AnUnwritableDirectoryFailsNamingThePathAndLeavesNothing) {
  if (geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  const fs::path sub = dir_ / "ro";
  fs::create_directories(sub);
  const std::string path = (sub / "out.json").string();
  ASSERT_TRUE(write_file_atomic(path, "old\n", nullptr));
  fs::permissions(sub, fs::perms::owner_read | fs::perms::owner_exec);
  std::string error;
  EXPECT_FALSE(write_file_atomic(path, "hello\n", &error));
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("Permission denied"), std::string::npos) << error;
  fs::permissions(sub, fs::perms::owner_all);
  // The old file is untouched and no temporary is left next to it.
  EXPECT_EQ(read(path), "old\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(sub), {}), 1);
}

TEST_F(WriteFile, APathUnderARegularFileFailsNamingThePathAndLeavesNothing) {
  // Unwritable even for root, unlike a directory without write permission.
  ASSERT_TRUE(write_file_atomic((dir_ / "file").string(), "x", nullptr));
  const std::string path = (dir_ / "file" / "out.json").string();
  std::string error;
  EXPECT_FALSE(write_file_atomic(path, "hello\n", &error));
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("Not a directory"), std::string::npos) << error;
  EXPECT_EQ(entries(), 1u);
  EXPECT_EQ(read(dir_ / "file"), "x");
}

TEST_F(WriteFile, AMissingDirectoryFailsNamingThePath) {
  const std::string path = (dir_ / "no" / "such" / "out.json").string();
  std::string error;
  EXPECT_FALSE(write_file_atomic(path, "hello\n", &error));
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("No such file or directory"), std::string::npos) << error;
  EXPECT_EQ(entries(), 0u);
}

TEST_F(WriteFile, ADashWritesToStdout) {
  testing::internal::CaptureStdout();
  std::string error = "stale";
  const bool ok = write_file_atomic("-", "to stdout\n", &error);
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_TRUE(ok);
  EXPECT_EQ(error, "");
  EXPECT_EQ(out, "to stdout\n");
  EXPECT_FALSE(fs::exists("-"));
  EXPECT_EQ(entries(), 0u);
}

// A FIFO is written through, never replaced by a file; one without a reader is an error
// (ENXIO), not a hang.
TEST_F(WriteFile, AFifoIsWrittenThroughNotReplaced) {
  const fs::path fifo = dir_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string error;
  EXPECT_FALSE(write_file_atomic(fifo.string(), "nobody reads\n", &error));
  EXPECT_NE(error.find("No such device or address"), std::string::npos) << error;
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // the reader is there first
  ASSERT_GE(reader, 0);
  EXPECT_TRUE(write_file_atomic(fifo.string(), "through\n", &error)) << error;
  char buf[64] = {};
  EXPECT_EQ(::read(reader, buf, sizeof(buf)), 8);
  ::close(reader);
  EXPECT_EQ(std::string(buf), "through\n");
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
  EXPECT_EQ(entries(), 1u);
}

// /dev/stdout and its kin name an open descriptor: the text goes to it, whatever it is.
TEST_F(WriteFile, DevStdoutWritesToTheDescriptor) {
  testing::internal::CaptureStdout();
  std::string error;
  const bool ok = write_file_atomic("/dev/stdout", "to fd 1\n", &error);
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_TRUE(ok) << error;
  EXPECT_EQ(out, "to fd 1\n");
}

// A dangling symlink stays a symlink; the file it names is created.
TEST_F(WriteFile, ADanglingSymlinkGetsItsTargetCreated) {
  fs::create_symlink("target.json", dir_ / "link.json");
  std::string error;
  ASSERT_TRUE(write_file_atomic((dir_ / "link.json").string(), "new\n", &error)) << error;
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir_ / "link.json")));
  EXPECT_EQ(read(dir_ / "target.json"), "new\n");
}

// A symlink keeps pointing where it did; the file it names gets the new text.
TEST_F(WriteFile, ASymlinkStaysAndItsTargetIsReplaced) {
  ASSERT_TRUE(write_file_atomic((dir_ / "real.json").string(), "old\n", nullptr));
  fs::create_symlink("real.json", dir_ / "link.json");
  std::string error;
  ASSERT_TRUE(write_file_atomic((dir_ / "link.json").string(), "new\n", &error)) << error;
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir_ / "link.json")));
  EXPECT_EQ(read(dir_ / "real.json"), "new\n");
  EXPECT_EQ(entries(), 2u);
}

// A name of NAME_MAX bytes is legal: the temporary beside it must not push past the limit.
TEST_F(WriteFile, ALongLegalNameIsWrittenAndLeavesNoTemporary) {
  const std::string path = (dir_ / std::string(255, 'n')).string();
  std::string error;
  ASSERT_TRUE(write_file_atomic(path, "long\n", &error)) << error;
  EXPECT_EQ(read(path), "long\n");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(WriteFile, ANameLongerThanTheLimitFailsAtOpen) {
  const std::string path = (dir_ / std::string(256, 'n')).string();
  OutputFile out;
  std::string error;
  EXPECT_FALSE(out.open(path, &error));
  EXPECT_NE(error.find("File name too long"), std::string::npos) << error;
  EXPECT_EQ(entries(), 0u);
}

// open() finds an unwritable destination before there is any text to write.
TEST_F(WriteFile, OpenFindsAMissingDirectoryOrADirectoryBeforeTheText) {
  std::string error;
  OutputFile missing;
  EXPECT_FALSE(missing.open((dir_ / "no" / "out.json").string(), &error));
  EXPECT_NE(error.find("No such file or directory"), std::string::npos) << error;
  OutputFile directory;
  EXPECT_FALSE(directory.open(dir_.string(), &error));
  EXPECT_NE(error.find("Is a directory"), std::string::npos) << error;
  EXPECT_EQ(entries(), 0u);
}

// The temporary made by open() is removed if nothing is committed (the run failed).
TEST_F(WriteFile, AnOutputNotCommittedLeavesNothing) {
  {
    OutputFile out;
    std::string error;
    ASSERT_TRUE(out.open((dir_ / "out.json").string(), &error)) << error;
    EXPECT_EQ(entries(), 1u);  // the temporary
  }
  EXPECT_EQ(entries(), 0u);
  OutputFile out;
  ASSERT_TRUE(out.open((dir_ / "out.json").string(), nullptr));
  ASSERT_TRUE(out.commit("x\n", nullptr));
  EXPECT_EQ(read(dir_ / "out.json"), "x\n");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(WriteFile, AFullDeviceFailsAtCommit) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  OutputFile out;
  std::string error;
  ASSERT_TRUE(out.open("/dev/full", &error)) << error;
  EXPECT_FALSE(out.commit("x\n", &error));
  EXPECT_NE(error.find("cannot write /dev/full: No space left on device"), std::string::npos) << error;
}

}  // namespace
}  // namespace report
