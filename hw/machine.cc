// Machine and Topology queries, loading a profile by name or path, and --cpus restriction.
// TOML parsing is in machine_toml.cc, reading /sys in host.cc.
#include "hw/machine.h"

#include <algorithm>
#include <cassert>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "hw/machine_internal.h"

namespace hw {

namespace {

// Ids are dense (0..k-1), so the count is the largest id plus one.
int count_ids(const std::vector<int>& ids) {
  return ids.empty() ? 0 : *std::max_element(ids.begin(), ids.end()) + 1;
}

std::string builtin_list() {
  std::string s;
  for (const std::string& name : builtin_machines()) s += (s.empty() ? "" : ", ") + name;
  return s;
}

}  // namespace

int Topology::nr_cores() const { return count_ids(core_of); }
int Topology::nr_llcs() const { return count_ids(llc_of); }
int Topology::nr_sockets() const { return count_ids(socket_of); }

// O(1) for the two numberings Linux uses on full machines (siblings i and i + nr_cpus/2, or
// 2i and 2i+1); otherwise (e.g. after --cpus cut a machine mid-way) a scan of all CPUs. The
// kernel model builds its per-CPU sibling masks once at boot, as Linux does, so the scan is
// not on a hot path.
int Topology::smt_sibling(int cpu) const {
  assert(cpu >= 0 && cpu < nr_cpus);
  const int core = core_of[cpu];
  const int half = nr_cpus / 2;
  for (int c : {cpu + half, cpu - half, cpu ^ 1}) {
    if (c >= 0 && c < nr_cpus && c != cpu && core_of[c] == core) return c;
  }
  for (int c = 0; c < nr_cpus; c++) {
    if (c != cpu && core_of[c] == core) return c;
  }
  return -1;
}

sim::Time Machine::line_transfer_ns(int a, int b) const {
  assert(a >= 0 && a < topo.nr_cpus && b >= 0 && b < topo.nr_cpus);
  return costs.line_ns(line_distance(a, b, topo.place(a), topo.place(b)));
}

Topology make_topology(int sockets, int cores_per_socket, int threads_per_core,
                       int cores_per_llc, bool split) {
  Topology t;
  const int nr_cores = sockets * cores_per_socket;
  t.nr_cpus = nr_cores * threads_per_core;
  t.core_of.resize(t.nr_cpus);
  t.llc_of.resize(t.nr_cpus);
  t.socket_of.resize(t.nr_cpus);
  for (int cpu = 0; cpu < t.nr_cpus; cpu++) {
    const int core = split ? cpu % nr_cores : cpu / threads_per_core;
    t.core_of[cpu] = core;
    // Cores are numbered socket by socket and LLCs never straddle a socket (cores_per_llc
    // divides cores_per_socket), so a global division gives both ids densely.
    t.llc_of[cpu] = core / cores_per_llc;
    t.socket_of[cpu] = core / cores_per_socket;
  }
  return t;
}

void densify(Topology* t) {
  for (std::vector<int>* ids : {&t->core_of, &t->llc_of, &t->socket_of}) {
    std::map<int, int> dense;
    for (int& id : *ids) {
      auto it = dense.emplace(id, static_cast<int>(dense.size())).first;
      id = it->second;
    }
  }
}

const char* embedded_profile(std::string_view name) {
  for (int i = 0; i < kNrEmbeddedProfiles; i++) {
    if (name == kEmbeddedProfiles[i].name) return kEmbeddedProfiles[i].text;
  }
  return nullptr;
}

// Every embedded file is a built-in name: host.toml is embedded too, for the host's costs.
std::vector<std::string> builtin_machines() {
  std::vector<std::string> names;
  for (int i = 0; i < kNrEmbeddedProfiles; i++) names.push_back(kEmbeddedProfiles[i].name);
  return names;
}

LoadResult load_machine(const std::string& name_or_path, Machine* out) {
  // "host" first: machines/host.toml holds only its costs, the topology comes from /sys.
  if (name_or_path == "host") return read_host_machine("/sys", out);
  if (const char* text = embedded_profile(name_or_path)) {
    return parse_machine_toml(text, name_or_path, out);
  }
  std::error_code ec;
  if (!std::filesystem::exists(name_or_path, ec)) {
    return {"machine '" + name_or_path + "': no such built-in profile (" + builtin_list() +
            ") or file"};
  }
  if (!std::filesystem::is_regular_file(name_or_path, ec)) {
    return {"machine '" + name_or_path + "': not a regular file"};
  }
  std::ifstream in(name_or_path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) return {"machine '" + name_or_path + "': cannot read the file"};
  return parse_machine_toml(text.str(), name_or_path, out);
}

LoadResult restrict_cpus(Machine* m, int n) {
  Topology& t = m->topo;
  if (n < 1 || n > t.nr_cpus) {
    return {"--cpus must be between 1 and " + std::to_string(t.nr_cpus) + " (the CPUs of machine '" +
            m->name + "'), got " + std::to_string(n)};
  }
  if (n == t.nr_cpus) return {};
  t.nr_cpus = n;
  t.core_of.resize(n);
  t.llc_of.resize(n);
  t.socket_of.resize(n);
  // The first n CPUs may leave out whole cores, LLCs or sockets; ids must stay dense.
  densify(&t);
  m->description += " Restricted to its first " + std::to_string(n) + " CPUs (--cpus).";
  return {};
}

}  // namespace hw
