// libFuzzer target (-DSCHEDLAB_FUZZ=ON, clang): scenario files, machine files and --set lists
// through fuzz::run_input. scripts/fuzz builds and runs it; docs/architecture.md.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::run_input(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
