// Virtual time for the engine: signed 64-bit nanoseconds, as the kernel's ktime_t.
// Names carry the unit (`_ns`) wherever a plain integer holds a duration.
#pragma once
#include <cstdint>

namespace sim {

using Time = int64_t;  // nanoseconds since the start of the run

inline constexpr Time kNsecPerUsec = 1000;
inline constexpr Time kNsecPerMsec = 1000 * 1000;
inline constexpr Time kNsecPerSec = 1000 * 1000 * 1000;
inline constexpr Time kTimeMax = INT64_MAX;

}  // namespace sim
