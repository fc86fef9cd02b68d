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

// Writes text to path, or to stdout if path is "-". A file is written to a temporary in the
// same directory, flushed to disk and renamed over path, so path holds either its old
// contents or all of text, never a prefix. On failure returns false and sets *error (may be
// null) to "cannot write <path>: <strerror>"; no temporary is left behind.
bool write_file_atomic(const std::string& path, const std::string& text, std::string* error);

}  // namespace report
