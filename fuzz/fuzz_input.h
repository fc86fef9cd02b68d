// The fuzz target's entry point, shared by the libFuzzer binary (fuzz/fuzz_main.cc, built with
// -DSCHEDLAB_FUZZ=ON) and the regression test that replays tests/fuzz/regressions/ in the
// normal build. One input holds up to three parts, each fed to the path the CLI uses:
//
//   <scenario file text>          -> scenario::load_scenario_file (as `schedlab run FILE`)
//   %%machine
//   <machine file text>           -> hw::load_machine via `machine = FILE` (as --machine FILE)
//   %%set
//   KEY=VALUE                     -> scenario::set_assignment, one per line (as --set)
//   +NAME:key=value,...           -> scenario::add_also (as --also)
//
// Each part is optional; a part starts at a line that is exactly its marker. An input that
// parses and validates (scenario::validate) is run for at most kMaxSimNs of simulated time,
// unless it is larger than the bounds below (then only parsed and validated).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fuzz {

inline constexpr int64_t kMaxSimNs = 1'000'000;  // 1 ms
inline constexpr int kMaxCpus = 1024;            // larger machines are only built and checked
inline constexpr int64_t kMaxParamNumber = 512;  // a larger integer parameter: not run
inline constexpr size_t kMaxAlso = 4;

enum class Outcome {
  kRejected,   // a part did not parse or validate: `error` is the one-line message
  kValidated,  // valid, but beyond the bounds: not run
  kRan,        // valid and run
};

struct Result {
  Outcome outcome = Outcome::kRejected;
  std::string error;
};

// Feeds one input through the CLI's parse and validate paths and runs it if it is valid and
// small. Writes the scenario and machine parts to files in a private temporary directory
// (the CLI's loaders read files). Never throws for bad input: a crash, hang or sanitizer
// report here is a bug.
Result run_input(std::string_view data);

}  // namespace fuzz
