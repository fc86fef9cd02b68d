// Internals of the hw layer shared by its .cc files and its tests; not for other layers.
// The profile table is generated at build time from machines/*.toml by hw/embed_profiles.cmake.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "hw/machine.h"

namespace hw {

// One machines/<name>.toml, embedded verbatim.
struct EmbeddedProfile {
  const char* name;  // file stem: "genoa", "host", ...
  const char* text;  // the whole TOML file
};
// Sorted by name. Defined in the generated machine_profiles.cc.
extern const EmbeddedProfile kEmbeddedProfiles[];
extern const int kNrEmbeddedProfiles;

// Linux's largest NR_CPUS on x86_64; bounds profiles and /sys lists so a typo cannot ask for
// a giant allocation.
inline constexpr int kMaxCpus = 8192;

// The keys a [costs] table may hold: one per field of Costs, with the field's name.
const std::vector<std::string>& cost_keys();

// The embedded text of machines/<name>.toml, or nullptr.
const char* embedded_profile(std::string_view name);

// Parses a TOML document that may hold only `[costs]`, `cs_loop_3m_ns`, `name` and
// `description` (machines/host.toml: the topology comes from /sys). Fills m->costs and
// m->cs_loop_3m_ns; leaves the topology alone.
LoadResult parse_costs_toml(const std::string& text, const std::string& origin, Machine* m);

// Builds a Topology from counts. `split`: SMT siblings are i and i + nr_cores (how Linux
// numbers AMD and Intel servers); otherwise they are 2i and 2i + 1. REQUIRES: counts were
// validated (>= 1, cores_per_llc divides cores_per_socket, threads_per_core in {1, 2}).
Topology make_topology(int sockets, int cores_per_socket, int threads_per_core,
                       int cores_per_llc, bool split);

// Renumbers core/llc/socket ids densely (0..k-1) in order of first appearance by CPU.
void densify(Topology* t);

}  // namespace hw
