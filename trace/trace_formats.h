// The trace.dat format files of the traced events (what
// /sys/kernel/tracing/events/<system>/<event>/format shows on x86-64), their ids and names,
// and the ring buffer's header descriptions; used by trace/trace_writer.cc.
#pragma once
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "trace/trace_writer.h"

namespace trace {

using kernel::TraceEvent;

// Event ids, as a kernel numbers them at boot (any distinct values do; the format files say
// which is which). TRACE_PRINT is fixed: the ftrace "print" event (trace_marker writes).
inline constexpr uint16_t TRACE_PRINT = 5;
inline constexpr uint16_t kEventId[] = {
    316, 318, 317, 319, 321, 320,  // sched_switch, sched_wakeup, _new, migrate, fork, exit
    162, 163, 164, 165,            // irq_handler_entry/exit, softirq_entry/exit
    110, 111,                      // hrtimer_expire_entry/exit
    600, 601, 602, 603, 604,       // schedlab: slice_ext_*
};
static_assert(std::size(kEventId) == static_cast<size_t>(TraceEvent::user_span_begin));

// softirq_entry/exit's vector names (show_softirq_name()).
inline constexpr const char* kSoftirqName[] = {"HI",      "TIMER", "NET_TX",  "NET_RX", "BLOCK",
                                               "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"};
// The event's name in its format file and in the text.
const char* event_name(TraceEvent e);
// The ftrace "print" event's format file (trace_marker writes).
std::string ftrace_print_format();
// The systems and their events' format files, in file order.
std::vector<std::pair<std::string, std::vector<std::string>>> event_formats();
// events/header_page and events/header_event of a 64-bit kernel.
extern const char kHeaderPage[];
extern const char kHeaderEvent[];

}  // namespace trace
