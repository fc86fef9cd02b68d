// Workload parameter parsing: integers, doubles, booleans, durations with units.
#include <cmath>
#include <cstdlib>

#include "sim/parse.h"
#include "workloads/workload.h"

namespace workloads {

std::string Params::get(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? "" : it->second;
}

int Params::get_int_in(const std::string& name, int lo, int hi) const {
  const std::string v = get(name);
  long long r = 0;
  if (!kernel::parse_int(v, &r) || r < lo || r > hi) {
    if (error_.empty())
      error_ = name + ": expected an integer from " + std::to_string(lo) + " to " +
               std::to_string(hi) + " (got '" + v + "')";
    return 0;
  }
  return static_cast<int>(r);
}

double Params::get_double(const std::string& name) const {
  const std::string v = get(name);
  char* end = nullptr;
  const double r = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(r)) {
    if (error_.empty()) error_ = name + ": expected a number (got '" + v + "')";
    return 0;
  }
  return r;
}

int64_t Params::get_ns(const std::string& name) const {
  int64_t ns = 0;
  if (!sim::parse_duration(get(name), &ns)) {
    if (error_.empty()) error_ = name + ": expected a duration like 10us, 5ms, 1s (got '" + get(name) + "')";
    return 0;
  }
  return ns;
}

bool Params::get_bool(const std::string& name) const {
  const std::string v = get(name);
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  if (error_.empty()) error_ = name + ": expected true or false (got '" + v + "')";
  return false;
}

}  // namespace workloads
