// The atomic file writer every report goes through (report/output_file.h).
#include "report/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace report {

namespace {
// The descriptor that `path` names if it is /dev/stdout, /dev/stderr, /dev/fd/N or
// /proc/self/fd/N; else -1.
int descriptor_named(const std::string& path) {
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (const std::string prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (path.rfind(prefix, 0) != 0) continue;
    int fd = -1;
    const char* first = path.data() + prefix.size();
    const char* last = path.data() + path.size();
    const auto r = std::from_chars(first, last, fd);
    if (r.ec == std::errc() && r.ptr == last && r.ptr != first) return fd;
  }
  return -1;
}
}  // namespace

bool OutputFile::fail(int err, std::string* error) {
  if (error != nullptr) *error = fmt::format("cannot write {}: {}", path_, std::strerror(err));
  discard();
  return false;
}

void OutputFile::discard() {
  if (fd_ >= 0 && kind_ == Kind::File) ::close(fd_);
  if (kind_ == Kind::File && !tmp_.empty()) ::unlink(tmp_.c_str());
  fd_ = -1;
  tmp_.clear();
  kind_ = Kind::Closed;
}

OutputFile::~OutputFile() { discard(); }

bool OutputFile::open(const std::string& path, std::string* error) {
  namespace fs = std::filesystem;
  discard();
  path_ = path;
  if (error != nullptr) error->clear();
  if (path == "-") {
    kind_ = Kind::Stdout;
    return true;
  }
  if (path.empty()) return fail(ENOENT, error);
  // A name of one of this process's descriptors (/dev/stdout, /dev/fd/N, /proc/self/fd/N):
  // written to the descriptor itself, in whatever mode it was opened (a shell's >> appends).
  if (const int own = descriptor_named(path); own >= 0) {
    const int flags = ::fcntl(own, F_GETFL);
    if (flags < 0) return fail(errno, error);
    if ((flags & O_ACCMODE) == O_RDONLY) return fail(EBADF, error);
    kind_ = Kind::Descriptor;
    fd_ = own;
    return true;
  }
  fs::path target(path);
  if (!target.has_filename()) return fail(EISDIR, error);
  // A symlink keeps pointing where it did: follow it to the file it names (which may not
  // exist yet), and replace that one.
  std::error_code ec;
  for (int hops = 0; fs::is_symlink(fs::symlink_status(target, ec)); ++hops) {
    if (hops == 40) return fail(ELOOP, error);
    const fs::path link = fs::read_symlink(target, ec);
    if (ec) return fail(ec.value(), error);
    target = link.is_absolute() ? link : target.parent_path() / link;
  }
  target_ = target.string();
  const fs::file_status st = fs::status(target, ec);
  if (fs::is_directory(st)) return fail(EISDIR, error);
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    // A device or FIFO (/dev/null, a named pipe to another program): written through at
    // commit, since renaming a file over it would replace the node. Checked for write
    // permission now; a FIFO's reader may come later.
    if (::access(target.c_str(), W_OK) != 0) return fail(errno, error);
    kind_ = Kind::Node;
    return true;
  }
  // Same directory as the target: rename() is atomic only within one filesystem. A dot
  // name so a crash's leftover does not pass for a report; pid + counter keep concurrent
  // writers (threads or processes) apart, and O_EXCL makes sure. The target's name is cut
  // so that the temporary's stays within the directory's NAME_MAX.
  const fs::path dir = target.parent_path();
  const std::string name = target.filename().string();
  long name_max = ::pathconf(dir.empty() ? "." : dir.c_str(), _PC_NAME_MAX);
  if (name_max <= 0) name_max = NAME_MAX;
  if (name.size() > static_cast<size_t>(name_max)) return fail(ENAMETOOLONG, error);
  static std::atomic<unsigned> serial{0};
  for (int attempt = 0; attempt < 100 && fd_ < 0; attempt++) {
    const std::string suffix = fmt::format(".tmp.{}.{}", getpid(), serial++);
    const size_t room = static_cast<size_t>(name_max) - 1 - suffix.size();
    tmp_ = (dir / ("." + name.substr(0, room) + suffix)).string();
    // 0666 minus the umask, as for any file the user creates.
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    const int err = errno;
    tmp_.clear();
    return fail(err, error);
  }
  kind_ = Kind::File;
  return true;
}

bool OutputFile::commit(const std::string& text, std::string* error) {
  // write() all of the text to an open descriptor; 0 or the errno.
  auto write_all = [&](int fd) {
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno;
      }
      done += static_cast<size_t>(n);
    }
    return 0;
  };
  switch (kind_) {
    case Kind::Closed:
      return fail(EBADF, error);
    case Kind::Stdout:
      if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() ||
          std::fflush(stdout) != 0) {
        const int err = errno;
        path_ = "to stdout";
        return fail(err, error);
      }
      break;
    case Kind::Descriptor:
      // stdout's buffer first, when the descriptor is 1: the order the user sees.
      if (fd_ == 1) std::fflush(stdout);
      if (const int err = write_all(fd_)) return fail(err, error);
      break;
    case Kind::Node: {
      // A FIFO without a reader fails (ENXIO) instead of blocking; a socket cannot be
      // opened (ENXIO).
      const int out = ::open(target_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (out < 0) return fail(errno, error);
      ::fcntl(out, F_SETFL, ::fcntl(out, F_GETFL) & ~O_NONBLOCK);
      int err = write_all(out);
      if (::close(out) != 0 && !err) err = errno;
      if (err) return fail(err, error);
      break;
    }
    case Kind::File: {
      if (const int err = write_all(fd_)) return fail(err, error);
      // Without fsync a crash after the rename could leave an empty file under the new name.
      if (::fsync(fd_) != 0) return fail(errno, error);
      const int fd = fd_;
      fd_ = -1;
      if (::close(fd) != 0) return fail(errno, error);
      if (std::rename(tmp_.c_str(), target_.c_str()) != 0) return fail(errno, error);
      tmp_.clear();
      break;
    }
  }
  kind_ = Kind::Closed;
  fd_ = -1;
  if (error != nullptr) error->clear();
  return true;
}

bool write_file_atomic(const std::string& path, const std::string& text, std::string* error) {
  OutputFile out;
  return out.open(path, error) && out.commit(text, error);
}

}  // namespace report
