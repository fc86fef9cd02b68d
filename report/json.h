// The JSON form of one run's results (schema "schedlab.results", documented with every key in
// docs/results-schema.md) and its inverse. Files are written with report/output_file.h.
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

}  // namespace report
