// Machine and Topology queries, loading a profile by name or path, and --cpus restriction.
// TOML parsing is in machine_toml.cc, reading /sys in host.cc.
#include "hw/machine.h"

#include <algorithm>
#include <cassert>
#include <charconv>
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

// One decimal count of a synth: name, 1..kMaxCpus, whole text.
bool synth_count(std::string_view text, int* out) {
  int v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || v < 1 || v > kMaxCpus) return false;
  *out = v;
  return true;
}

}  // namespace

LoadResult synth_machine(const std::string& name, Machine* out) {
  const std::string_view prefix = "synth:";
  std::string_view rest = std::string_view(name).substr(prefix.size());
  const std::string usage = "machine '" + name + "': expected synth:SOCKETSxCORESxSMT[:llc=CORES]";
  std::string_view llc_text;
  if (const size_t colon = rest.find(':'); colon != std::string_view::npos) {
    const std::string_view opt = rest.substr(colon + 1);
    if (opt.substr(0, 4) != "llc=") return {usage + " (unknown option '" + std::string(opt) + "')"};
    llc_text = opt.substr(4);
    rest = rest.substr(0, colon);
  }
  int counts[3] = {};
  for (int i = 0; i < 3; ++i) {
    const size_t x = i < 2 ? rest.find('x') : rest.size();
    if (x == std::string_view::npos || !synth_count(rest.substr(0, x), &counts[i])) return {usage};
    rest = i < 2 ? rest.substr(x + 1) : std::string_view();
  }
  const int sockets = counts[0], cores = counts[1], smt = counts[2];
  if (smt > 2) return {"machine '" + name + "': SMT must be 1 or 2 (got " + std::to_string(smt) + ")"};
  int llc = std::min(cores, 8);  // Zen's CCX: 8 cores share an L3
  if (!llc_text.empty() && !synth_count(llc_text, &llc))
    return {"machine '" + name + "': llc must be a count of cores (got '" + std::string(llc_text) + "')"};
  if (cores % llc != 0)
    return {"machine '" + name + "': llc=" + std::to_string(llc) + " must divide the " + std::to_string(cores) +
            " cores per socket"};
  if (static_cast<int64_t>(sockets) * cores * smt > kMaxCpus)
    return {"machine '" + name + "': " + std::to_string(static_cast<int64_t>(sockets) * cores * smt) +
            " CPUs, more than the limit of " + std::to_string(kMaxCpus)};
  if (LoadResult r = parse_machine_toml(embedded_profile("genoa"), "genoa", out); !r.ok()) return r;
  out->name = name;
  out->topo = make_topology(sockets, cores, smt, llc, true);
  out->description = "Generated: " + std::to_string(sockets) + " sockets x " + std::to_string(cores) + " cores x " +
                     std::to_string(smt) + " SMT = " + std::to_string(out->topo.nr_cpus) + " CPUs, LLC of " +
                     std::to_string(llc) + " cores" +
                     (smt == 2 ? ", SMT siblings i and i + " + std::to_string(out->topo.nr_cpus / 2) : std::string()) +
                     "; genoa's costs";
  return {};
}

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
  if (name_or_path.rfind("synth:", 0) == 0) return synth_machine(name_or_path, out);
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
