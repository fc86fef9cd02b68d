// The kernel settings of a run, declared once: each entry of kernel_settings() has its name,
// type, bounds, help and where it is stored in KernelConfig; the defaults per version are read
// from default_config(). From this list come set_config_key() (scenario files' [kernel] table
// and --set), its error text, `schedlab list` / `schedlab list settings`, and docs/settings.md
// (`schedlab list settings --markdown`, checked by Settings.DocsTableIsGenerated).
// Cross-field rules stay in validate_config().
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernel/config.h"

namespace kernel {

enum class SettingType {
  Bool,      // true|false (also 1|0, on|off, yes|no)
  Boot01,    // a boot parameter that is 0 or 1 (true|false read as 1|0)
  Int,       // a whole number in lo..hi
  Duration,  // a duration with its unit (sim::parse_duration), lo..hi ns
  Enum,      // one of choice(0), choice(1), ...: stored as its index
  Double,    // a number in dlo..dhi
};

struct Setting {
  const char* name;
  SettingType type;
  const char* help;
  int64_t lo = 0, hi = 0;         // Int, Duration
  // Int: a word also taken, stored as word_value outside lo..hi (launcher_cpu=random).
  const char* word = nullptr;
  int64_t word_value = 0;
  double dlo = 0, dhi = 0;        // Double
  const char* unit = nullptr;     // Int: shown after the bounds ("ns")
  // Replaces the bounds in the error text and the docs ("from 1 to the CPU count").
  const char* range = nullptr;
  // Enum: the name of value i, nullptr past the last; `noun` words the error ("unknown
  // model 'x' (choose ...)"; nullptr: "expected a or b (got 'x')").
  const char* (*choice)(int i) = nullptr;
  const char* noun = nullptr;
  // Replaces the default shown (a default that is not a fixed value).
  const char* default_note = nullptr;
  // Where the value lives: Bool, Boot01, Int, Duration, Enum through get/set (int64_t),
  // Double through get_d/set_d. `arg` is passed to both (the bit of a sched_feat.* entry).
  int64_t (*get)(const KernelConfig&, int arg) = nullptr;
  void (*set)(KernelConfig*, int arg, int64_t) = nullptr;
  double (*get_d)(const KernelConfig&) = nullptr;
  void (*set_d)(KernelConfig*, double) = nullptr;
  int arg = 0;
};

// Every setting, in list order (sched_feat.* last, one per feature of kernel/sched/features.h).
const std::vector<Setting>& kernel_settings();
const Setting* find_setting(const std::string& key);
// A key set_config_key() answers for: a listed name, or one of a listed family
// ("slice_ext.x", "sched_feat.X"), whose unknown members it rejects by name.
bool is_config_key(const std::string& key);
// The value of `s` in `cfg` as a scenario file would write it.
std::string setting_value(const Setting& s, const KernelConfig& cfg);
// The default: 7.0's, with the versions whose default differs ("true (6.12: false)").
std::string setting_default(const Setting& s);
// The values it takes ("true | false", "1..100000", "none | rfc | ...").
std::string setting_values(const Setting& s);

// `schedlab list settings` (text) and docs/settings.md (`--markdown`).
std::string settings_text();
std::string settings_markdown();

}  // namespace kernel
