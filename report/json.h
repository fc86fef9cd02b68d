// The JSON form of one run's results (schema "schedlab.results", documented with every key in
// docs/results-schema.md), its inverse, and the atomic file writer used for reports.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "report/results.h"

namespace report {

inline constexpr const char* kSchemaName = "schedlab.results";

// Keys in a fixed order (docs/results-schema.md), so equal Results give equal documents.
// Non-finite doubles (metric values, latency means) become null.
nlohmann::ordered_json to_json(const Results& r);

// to_json(r) pretty-printed with a 2-space indent and a trailing newline. The same Results
// always give byte-identical text; invalid UTF-8 in names is replaced by U+FFFD rather than
// failing the run at its very end.
std::string render_json(const Results& r);

// The inverse of to_json. Missing keys keep their defaults and unknown keys are ignored
// (files from later versions with added keys still load); a key of the wrong type, a
// negative count, another "schema" or a newer "schema_version" is an error, returned in
// *error (may be null) naming the key, e.g. "tasks[3].nvcsw: expected a non-negative
// integer, got string"; the result is then default. On success *error is cleared.
// The aggregate "cpus" totals are not read: they are sums of "per_cpu".
Results from_json(const nlohmann::json& j, std::string* error);

// Parses JSON text and reads it with from_json. Returns false, with a message, on a syntax
// error or a from_json error.
bool parse_json(const std::string& text, Results* out, std::string* error);

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
