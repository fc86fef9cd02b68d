// The "host" machine: topology read from /sys/devices/system/cpu, costs from machines/host.toml.
// Linux CPU numbers are renumbered 0..n-1 in order when some are offline.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "hw/machine_internal.h"
#include "sim/parse.h"

namespace hw {

namespace fs = std::filesystem;

namespace {

// Contents of a one-line sysfs file without the trailing newline; false if unreadable.
bool read_line(const fs::path& p, std::string* out) {
  std::ifstream in(p);
  if (!in || !std::getline(in, *out)) return false;
  while (!out->empty() && (out->back() == ' ' || out->back() == '\r')) out->pop_back();
  return true;
}

bool read_int(const fs::path& p, int* out) {
  std::string s;
  if (!read_line(p, &s)) return false;
  try {
    size_t used = 0;
    *out = std::stoi(s, &used);
    return used == s.size();
  } catch (const std::exception&) {
    return false;
  }
}

// The smallest online CPU of the cpulist in file `p`, falling back to `self` when the file is
// missing or lists no online CPU. Linux CPUs sharing a core or a cache all report the same
// list, so its smallest member names the group.
int group_leader(const fs::path& p, const std::vector<int>& linux_to_sim, int self) {
  std::string s;
  std::vector<int> cpus;
  if (!read_line(p, &s) || !sim::parse_cpu_list(s, kMaxCpus, &cpus)) return self;
  int leader = self;
  for (int c : cpus) {
    if (c < static_cast<int>(linux_to_sim.size()) && linux_to_sim[c] >= 0) leader = std::min(leader, c);
  }
  return leader;
}

// The cache/index* entry with the highest `level` (the LLC), or an empty path.
fs::path llc_entry(const fs::path& cpu_dir, int* level) {
  fs::path best;
  *level = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(cpu_dir / "cache", ec)) {
    int l = 0;
    if (e.path().filename().string().rfind("index", 0) == 0 && read_int(e.path() / "level", &l) &&
        l > *level && fs::exists(e.path() / "shared_cpu_list")) {
      *level = l;
      best = e.path();
    }
  }
  return best;
}

std::string plural(int n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

}  // namespace

LoadResult read_host_machine(const std::string& sys_root, Machine* out) {
  const fs::path cpu_root = fs::path(sys_root) / "devices/system/cpu";
  std::string list_file = "online", list;
  if (!read_line(cpu_root / list_file, &list)) {
    list_file = "possible";
    if (!read_line(cpu_root / list_file, &list)) {
      return {"machine 'host': cannot read " + (cpu_root / "online").string() + " nor possible"};
    }
  }
  std::vector<int> linux_cpus;
  if (!sim::parse_cpu_list(list, kMaxCpus, &linux_cpus)) {
    return {"machine 'host': malformed CPU list '" + list + "' in " + (cpu_root / list_file).string()};
  }
  std::vector<int> linux_to_sim(linux_cpus.back() + 1, -1);
  for (size_t i = 0; i < linux_cpus.size(); i++) linux_to_sim[linux_cpus[i]] = static_cast<int>(i);

  Machine m;
  Topology& t = m.topo;
  t.nr_cpus = static_cast<int>(linux_cpus.size());
  int llc_level = 0, cpus_without_cache = 0;
  // Group keys, made dense by densify() below: (kLeader, smallest Linux CPU of the group),
  // (kCoreId, package, core_id) for a core without a sibling list, or (kAlone, Linux CPU).
  enum { kLeader, kCoreId, kAlone };
  std::map<std::tuple<int, int, int>, int> keys;
  auto key_id = [&keys](int kind, int a, int b = 0) {
    return keys.emplace(std::make_tuple(kind, a, b), static_cast<int>(keys.size())).first->second;
  };
  for (int cpu = 0; cpu < t.nr_cpus; cpu++) {
    const int lc = linux_cpus[cpu];
    const fs::path dir = cpu_root / ("cpu" + std::to_string(lc));
    int package = 0, core_id = -1, level = 0;
    read_int(dir / "topology/physical_package_id", &package);  // absent: one package
    t.socket_of.push_back(package);
    // Both files show the SMT mask Linux builds its SMT domain from (core_cpus_list is the
    // newer name); thread_siblings_list is absent on some kernels.
    fs::path siblings = dir / "topology/thread_siblings_list";
    if (!fs::exists(siblings)) siblings = dir / "topology/core_cpus_list";
    if (fs::exists(siblings)) {
      t.core_of.push_back(key_id(kLeader, group_leader(siblings, linux_to_sim, lc)));
    } else if (read_int(dir / "topology/core_id", &core_id)) {
      t.core_of.push_back(key_id(kCoreId, package, core_id));
    } else {
      t.core_of.push_back(key_id(kAlone, lc));
    }
    const fs::path llc = llc_entry(dir, &level);
    if (llc.empty()) {
      // No cache entries (e.g. a Firecracker guest): Linux's LLC mask is then the CPU itself,
      // the MC domain degenerates and no two CPUs share a cache; model exactly that.
      t.llc_of.push_back(key_id(kAlone, lc));
      cpus_without_cache++;
    } else {
      t.llc_of.push_back(key_id(kLeader, group_leader(llc / "shared_cpu_list", linux_to_sim, lc)));
      llc_level = std::max(llc_level, level);
    }
  }
  densify(&t);

  std::vector<int> threads(t.nr_cores(), 0), llc_size(t.nr_llcs(), 0);
  for (int cpu = 0; cpu < t.nr_cpus; cpu++) {
    if (++threads[t.core_of[cpu]] > 2) {
      return {"machine 'host': core of Linux CPU " + std::to_string(linux_cpus[cpu]) +
              " has more than 2 hardware threads; schedlab models at most 2"};
    }
    llc_size[t.llc_of[cpu]]++;
  }
  const bool smt = t.nr_cores() < t.nr_cpus;
  const auto [min_llc, max_llc] = std::minmax_element(llc_size.begin(), llc_size.end());

  std::string d = "This host, read from " + cpu_root.string() + ": " + plural(t.nr_cpus, "CPU") +
                  " (" + list_file + " " + list + "), " + plural(t.nr_sockets(), "socket") + ", " +
                  plural(t.nr_cores(), "core") + (smt ? " with SMT" : ", no SMT") + ", " +
                  plural(t.nr_llcs(), "LLC");
  if (cpus_without_cache == t.nr_cpus) {
    d += " (no cache information in /sys: each CPU is its own LLC, as Linux's MC domain "
         "degenerates there)";
  } else {
    d += " (L" + std::to_string(llc_level) + ", " + std::to_string(*min_llc) +
         (*min_llc == *max_llc ? "" : "-" + std::to_string(*max_llc)) + " CPUs per LLC";
    if (cpus_without_cache > 0) d += "; " + plural(cpus_without_cache, "CPU") + " without cache information";
    d += ")";
  }
  if (linux_cpus.back() + 1 != t.nr_cpus) d += "; Linux CPU numbers renumbered 0.." + std::to_string(t.nr_cpus - 1);
  m.name = "host";
  m.description = d + ". Costs from machines/host.toml.";

  const char* costs = embedded_profile("host");
  if (costs == nullptr) return {"machine 'host': machines/host.toml is not built in"};
  LoadResult r = parse_costs_toml(costs, "host.toml", &m);
  if (!r.ok()) return r;
  *out = std::move(m);
  return {};
}

}  // namespace hw
