// The trace writer: a kernel::TraceSink that keeps the events of a time window and renders
// them as ftrace text (what `cat /sys/kernel/tracing/trace` and `trace-cmd report` print,
// which ui.perfetto.dev imports as a systrace) or as a trace-cmd trace.dat (file format
// version 6) that `trace-cmd report` and KernelShark read. docs/tracing.md describes both.
#pragma once
#include <cstdint>
#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

#include "kernel/trace.h"

namespace trace {

enum class Format { Text, Dat };

// The simulated time kept: events with start <= ts < end.
struct Window {
  int64_t start = 0;
  int64_t end = INT64_MAX;
};

// "START,END" with durations (as --duration takes them: 10ms, 1.5s, ...), either side may be
// empty ("200ms," = from 200 ms on). "" or an error naming --trace-window and the value.
std::string parse_window(const std::string& text, Window* out);
// "text" or "dat", or from the file name: *.dat is trace.dat, anything else text. "" or an
// error naming --trace-format.
std::string parse_format(const std::string& format, const std::string& path, Format* out);

class TraceWriter final : public kernel::TraceSink {
 public:
  TraceWriter(Format format, Window window);
  ~TraceWriter() override;
  void record(const kernel::TraceRecord& r) override;
  // The file's contents for a machine of nr_cpus CPUs (call once, after the run).
  std::string finish(int nr_cpus);
  uint64_t nr_events() const { return nr_events_; }

 private:
  struct CpuBuffer;
  // One event (or trace_marker write) into the text or the CPU's pages.
  void emit(const kernel::TraceRecord& r);
  void emit_marker(const kernel::TraceRecord& at, std::string_view buf);
  void emit_text(const kernel::TraceRecord& r, const std::string_view* marker);
  void emit_dat(const kernel::TraceRecord& r, const std::string_view* marker);
  // A trace_marker write's text, in marker_ (valid until the next call).
  template <typename... Args>
  std::string_view marker(fmt::format_string<Args...> format, Args&&... args) {
    marker_.clear();
    fmt::format_to(std::back_inserter(marker_), format, std::forward<Args>(args)...);
    return {marker_.data(), marker_.size()};
  }
  void note_comm(const kernel::TraceTask& t);

  Format format_;
  Window window_;
  uint64_t nr_events_ = 0;
  fmt::memory_buffer text_;
  std::vector<CpuBuffer*> cpus_;
  // By pid (pids are small and dense): the comm (saved_cmdlines; "" = not seen), whether an
  // "extension granted" async slice is open, how many user spans are open (B without E).
  std::vector<std::string> comms_;
  std::vector<uint8_t> granted_;
  std::vector<int> spans_;
  std::string scratch_;
  fmt::memory_buffer marker_;
};

}  // namespace trace
