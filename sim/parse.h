// The program's one duration parser and one CPU-list parser, for every layer that reads them
// from text: workload parameters and scenario keys, kernel settings, machine profiles read
// from /sys, and `schedlab real`. Header-only, so that real/ (which can be configured and
// built on its own) uses them without linking the simulator. Callers word their own errors:
// these only say whether the text is well formed.
#pragma once
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace sim {

// "10ms", "1.5s", "200us", "500ns" -> nanoseconds, rounded to the nearest. A number needs its
// unit (ns, us, ms, s): a bare one would be a guess (10 read as 10 ns where 10 s was meant);
// only zero, the same in every unit, may go without. A sign is accepted (callers check the
// range). Returns false if malformed or beyond +-9.2e18 ns.
inline bool parse_duration(const std::string& text, int64_t* ns) {
  if (text.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return false;
  const std::string_view unit(end);
  double mult = 1;
  if (unit.empty()) {
    if (v != 0) return false;
  } else if (unit == "ns") mult = 1;
  else if (unit == "us") mult = 1e3;
  else if (unit == "ms") mult = 1e6;
  else if (unit == "s") mult = 1e9;
  else return false;
  const double r = v * mult;
  if (!std::isfinite(r) || std::fabs(r) > 9.2e18) return false;
  *ns = static_cast<int64_t>(std::llround(r));
  return true;
}

// A Linux cpulist ("0-3,8,10-11", as in /sys/devices/system/cpu/online or taskset -c) ->
// the ids, sorted, without duplicates. Each item is N or N-M (decimal, N <= M); every id
// must be below `limit`, which also bounds the list's size. Returns false if malformed
// (an empty list or an empty item included).
inline bool parse_cpu_list(std::string_view text, int limit, std::vector<int>* cpus) {
  cpus->clear();
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const char* const begin = text.data() + pos;
    const char* const end = text.data() + comma;
    // from_chars refuses overflow, which sscanf's %d would wrap.
    int lo = 0, hi = 0;
    auto r = std::from_chars(begin, end, lo);
    if (r.ec != std::errc()) return false;
    hi = lo;
    if (r.ptr != end && *r.ptr == '-') r = std::from_chars(r.ptr + 1, end, hi);
    if (r.ec != std::errc() || r.ptr != end) return false;
    if (lo < 0 || hi < lo || hi >= limit) return false;
    for (int c = lo; c <= hi; ++c) cpus->push_back(c);
    pos = comma + 1;
  }
  std::sort(cpus->begin(), cpus->end());
  cpus->erase(std::unique(cpus->begin(), cpus->end()), cpus->end());
  return !cpus->empty();
}

}  // namespace sim
