// The atomic file writer every report goes through: OutputFile and write_file_atomic.
#pragma once
#include <string>

namespace report {

// A destination for a report, opened before the work that produces the text so that an
// unwritable one is found first. `open` resolves a symlink to the file it names and creates
// a temporary file beside it (a name within the directory's NAME_MAX even when the target's
// name is long); `commit` writes the text to it, flushes it to disk and renames it over the
// target, so the target holds either its old contents or all of the text, never a prefix.
// "-" is stdout; a name of an open descriptor (/dev/stdout, /dev/fd/N, /proc/self/fd/N) is
// that descriptor; a device or FIFO is checked by `open` and written through by `commit` (a
// FIFO without a reader then fails, ENXIO, instead of blocking). Errors read
// "cannot write <path>: <strerror>". A temporary not committed is removed by the destructor.
class OutputFile {
 public:
  OutputFile() = default;
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Returns false with *error (may be null) set if path cannot be written.
  bool open(const std::string& path, std::string* error);
  // Writes text (once, after a successful open). False with *error set on failure; no
  // temporary is left behind either way.
  bool commit(const std::string& text, std::string* error);

 private:
  enum class Kind { Closed, Stdout, Descriptor, Node, File };
  bool fail(int err, std::string* error);
  void discard();
  Kind kind_ = Kind::Closed;
  std::string path_;    // as given, for messages
  std::string target_;  // symlinks resolved
  std::string tmp_;
  int fd_ = -1;
};

// OutputFile::open + commit in one: writes text to path.
bool write_file_atomic(const std::string& path, const std::string& text, std::string* error);

}  // namespace report
