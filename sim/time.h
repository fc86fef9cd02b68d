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

// t + d for t, d >= 0, held at kTimeMax instead of overflowing (ktime_add_safe()).
inline constexpr Time add_saturating(Time t, Time d) { return t > kTimeMax - d ? kTimeMax : t + d; }

}  // namespace sim
