// The trace writer (trace/trace_writer.h). The events and their fields are the kernel's own
// tracepoints (include/trace/events/sched.h, irq.h, timer.h); their format files and print
// formats below are what /sys/kernel/tracing/events/<system>/<event>/format shows on x86-64,
// and the text lines are what the kernel's trace_print_context() and each event's TP_printk
// print for them. The binary is trace-cmd's trace.dat version 6: the headers, the format
// files, kallsyms and saved_cmdlines, then per CPU the ring buffer's 4 KiB pages
// (kernel/trace/ring_buffer.c: a page header, then 4-byte event headers with 27-bit time
// deltas) exactly as `trace-cmd extract` copies them out of the kernel.
#include "trace/trace_writer.h"
#include "trace/trace_formats.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <array>
#include <cstring>

#include "sim/parse.h"

namespace trace {

using kernel::TraceEvent;
using kernel::TraceRecord;

std::string parse_window(const std::string& text, Window* out) {
  const size_t comma = text.find(',');
  auto bad = [&] {
    return fmt::format("--trace-window: must be START,END with durations, START < END (got '{}')", text);
  };
  if (comma == std::string::npos) return bad();
  Window w;
  const std::string a = text.substr(0, comma), b = text.substr(comma + 1);
  if (!a.empty() && (!sim::parse_duration(a, &w.start) || w.start < 0)) return bad();
  if (!b.empty() && (!sim::parse_duration(b, &w.end) || w.end <= w.start)) return bad();
  *out = w;
  return "";
}

std::string parse_format(const std::string& format, const std::string& path, Format* out) {
  if (format == "text") {
    *out = Format::Text;
  } else if (format == "dat") {
    *out = Format::Dat;
  } else if (format.empty()) {
    const bool dat = path.size() >= 4 && path.compare(path.size() - 4, 4, ".dat") == 0;
    *out = dat ? Format::Dat : Format::Text;
  } else {
    return fmt::format("--trace-format: must be text or dat (got '{}')", format);
  }
  return "";
}

namespace {

constexpr size_t kPageSize = 4096;
constexpr size_t kPageHeader = 16;  // u64 timestamp, local_t commit
constexpr size_t kPageData = kPageSize - kPageHeader;


// The simulated kernel's symbols: %ps of hrtimer_expire_entry's `function` and of the print
// event's `ip` (kallsyms in trace.dat, so trace-cmd prints the names the text has).
constexpr uint64_t kSymBase = 0xffffffff81100000ull;
constexpr const char* kHrtimerFn[] = {"tick_nohz_handler", "hrtick", "hrtimer_wakeup",
                                      "rseq_slice_expired"};
constexpr uint64_t kTracingMarkWrite = kSymBase + 0x1000;
uint64_t hrtimer_fn_addr(kernel::TraceHrtimer t) { return kSymBase + 0x100 * static_cast<uint64_t>(t); }


// sched_switch's prev_state as its TP_printk prints it: the TASK_REPORT letters, "R" for
// none, "+" for TASK_REPORT_MAX (preempted).
struct StateText {
  char s[20] = {};
  explicit StateText(long state) {
    static const char letters[] = "SDTtXZPI";
    size_t n = 0;
    if (state & 0xff) {
      for (int i = 0; i < 8; ++i)
        if (state & (1L << i)) {
          if (n) s[n++] = '|';
          s[n++] = letters[i];
        }
    } else {
      s[n++] = 'R';
    }
    if (state & 0x100) s[n++] = '+';
  }
};

template <typename T>
void put(std::string* s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little endian (x86-64), as the file header says
  s->append(b, sizeof(T));
}
template <typename T>
void put_at(uint8_t* p, size_t off, T v) {
  std::memcpy(p + off, &v, sizeof(T));
}
void put_comm(uint8_t* p, size_t off, const char* comm) {
  std::memcpy(p + off, comm, 16);  // NUL-padded by TraceTask
}

}  // namespace

// One CPU's ring buffer pages.
struct TraceWriter::CpuBuffer {
  std::string pages;
  size_t used = kPageData;  // data bytes used in the last page (full: start one)
  int64_t last_ts = 0;

  uint8_t* page() { return reinterpret_cast<uint8_t*>(pages.data() + pages.size() - kPageSize); }

  void new_page(int64_t ts) {
    pages.append(kPageSize, '\0');
    put_at<uint64_t>(page(), 0, static_cast<uint64_t>(ts));
    used = 0;
    last_ts = ts;
  }
  void append_words(const uint8_t* data, size_t n) {
    std::memcpy(page() + kPageHeader + used, data, n);
    used += n;
    put_at<uint64_t>(page(), 8, used);  // commit
  }
  // rb_update_event(): a 4-byte header (type_len = length / 4 up to 28 words, else 0 and
  // the length in array[0]), preceded by a time extend when the delta needs over 27 bits.
  void add(int64_t ts, const uint8_t* data, size_t len) {
    const size_t padded = (len + 3) & ~size_t{3};
    const bool small = padded <= 28 * 4;
    const size_t need = padded + (small ? 4 : 8) + 8;  // + a possible time extend
    if (used + need > kPageData) new_page(ts);
    uint64_t delta = static_cast<uint64_t>(ts - last_ts);
    last_ts = ts;
    uint8_t hdr[8];
    if (delta >= (1u << 27)) {
      put_at<uint32_t>(hdr, 0, 30u | static_cast<uint32_t>((delta & ((1u << 27) - 1)) << 5));
      put_at<uint32_t>(hdr, 4, static_cast<uint32_t>(delta >> 27));
      append_words(hdr, 8);
      delta = 0;
    }
    const uint32_t d = static_cast<uint32_t>(delta) << 5;
    if (small) {
      put_at<uint32_t>(hdr, 0, static_cast<uint32_t>(padded / 4) | d);
      append_words(hdr, 4);
    } else {
      put_at<uint32_t>(hdr, 0, d);
      put_at<uint32_t>(hdr, 4, static_cast<uint32_t>(padded + 4));
      append_words(hdr, 8);
    }
    std::memcpy(page() + kPageHeader + used, data, len);
    std::memset(page() + kPageHeader + used + len, 0, padded - len);
    used += padded;
    put_at<uint64_t>(page(), 8, used);
  }
};

TraceWriter::TraceWriter(Format format, Window window) : format_(format), window_(window) {}

TraceWriter::~TraceWriter() {
  for (CpuBuffer* b : cpus_) delete b;
}

namespace {
template <typename T>
T& by_pid(std::vector<T>* v, int pid) {
  if (static_cast<size_t>(pid) >= v->size()) v->resize(static_cast<size_t>(pid) + 1);
  return (*v)[static_cast<size_t>(pid)];
}
}  // namespace

void TraceWriter::note_comm(const kernel::TraceTask& t) {
  if (t.pid <= 0) return;
  std::string& c = by_pid(&comms_, t.pid);
  if (c.empty()) c = t.comm;
}

void TraceWriter::record(const TraceRecord& r) {
  if (r.ts < window_.start || r.ts >= window_.end) return;
  switch (r.type) {
    case TraceEvent::user_span_begin:
      by_pid(&spans_, r.curr.pid)++;
      emit_marker(r, marker("B|{}|{}", r.curr.tgid, r.name));
      return;
    case TraceEvent::user_span_end: {
      int& open = by_pid(&spans_, r.curr.pid);
      if (open == 0) return;  // opened before the window
      open--;
      emit_marker(r, marker("E|{}", r.curr.tgid));
      return;
    }
    default:
      break;
  }
  emit(r);
  // The grant as an async slice of the process (Perfetto: S/F with the thread id as cookie),
  // from the grant to the first of yield, revoke, expiry or the task leaving the CPU.
  auto close_grant = [&](const kernel::TraceTask& t) {
    uint8_t& open = by_pid(&granted_, t.pid);
    if (!open) return;
    open = 0;
    TraceRecord at = r;
    at.curr = t;
    emit_marker(at, marker("F|{}|extension granted|{}", t.tgid, t.pid));
  };
  switch (r.type) {
    case TraceEvent::slice_ext_grant: {
      uint8_t& open = by_pid(&granted_, r.a.pid);
      if (!open) {
        open = 1;
        TraceRecord at = r;
        at.curr = r.a;
        emit_marker(at, marker("S|{}|extension granted|{}", r.a.tgid, r.a.pid));
      }
      break;
    }
    case TraceEvent::slice_ext_yield:
    case TraceEvent::slice_ext_revoke:
    case TraceEvent::slice_ext_expire:
      close_grant(r.a);
      break;
    case TraceEvent::sched_switch:
      close_grant(r.a);
      break;
    default:
      break;
  }
}

void TraceWriter::emit(const TraceRecord& r) {
  nr_events_++;
  note_comm(r.curr);
  note_comm(r.a);
  note_comm(r.b);
  if (format_ == Format::Text)
    emit_text(r, nullptr);
  else
    emit_dat(r, nullptr);
}

void TraceWriter::emit_marker(const TraceRecord& at, std::string_view buf) {
  nr_events_++;
  note_comm(at.curr);
  if (format_ == Format::Text)
    emit_text(at, &buf);
  else
    emit_dat(at, &buf);
}

// trace_print_context() + the latency flags (irqs-off, need-resched, hardirq/softirq,
// preempt-depth, migrate-disable) + the event's TP_printk. Timestamps in ns (9 decimals).
void TraceWriter::emit_text(const TraceRecord& r, const std::string_view* marker) {
  const char flags[6] = {(r.irq_flags & 0x01) ? 'd' : '.', '.',
                         (r.irq_flags & 0x08) ? 'h' : (r.irq_flags & 0x10) ? 's' : '.', '.', '.', '\0'};
  const char* comm = r.curr.pid == 0 ? "<idle>" : r.curr.comm;
  auto out = std::back_inserter(text_);
  fmt::format_to(out, FMT_COMPILE("{:>16}-{:<7} [{:03d}] {} {:5d}.{:09d}: "), comm, r.curr.pid, r.cpu,
                 flags, r.ts / 1000000000, r.ts % 1000000000);
  if (marker) {
    fmt::format_to(out, FMT_COMPILE("tracing_mark_write: {}\n"), *marker);
    return;
  }
  fmt::format_to(out, FMT_COMPILE("{}: "), event_name(r.type));
  switch (r.type) {
    case TraceEvent::sched_switch:
      fmt::format_to(out, FMT_COMPILE("prev_comm={} prev_pid={} prev_prio={} prev_state={} ==> next_comm={} next_pid={} next_prio={}"),
                     r.a.comm, r.a.pid, r.a.prio, StateText(r.state).s, r.b.comm, r.b.pid, r.b.prio);
      break;
    case TraceEvent::sched_wakeup:
    case TraceEvent::sched_wakeup_new:
      fmt::format_to(out, FMT_COMPILE("comm={} pid={} prio={} target_cpu={:03d}"), r.a.comm, r.a.pid, r.a.prio, r.dest_cpu);
      break;
    case TraceEvent::sched_migrate_task:
      fmt::format_to(out, FMT_COMPILE("comm={} pid={} prio={} orig_cpu={} dest_cpu={}"), r.a.comm, r.a.pid, r.a.prio,
                     r.orig_cpu, r.dest_cpu);
      break;
    case TraceEvent::sched_process_fork:
      fmt::format_to(out, FMT_COMPILE("comm={} pid={} child_comm={} child_pid={}"), r.a.comm, r.a.pid, r.b.comm, r.b.pid);
      break;
    case TraceEvent::sched_process_exit:
      fmt::format_to(out, FMT_COMPILE("comm={} pid={} prio={}"), r.a.comm, r.a.pid, r.a.prio);
      break;
    case TraceEvent::irq_handler_entry:
      fmt::format_to(out, FMT_COMPILE("irq={} name={}"), r.irq, r.name);
      break;
    case TraceEvent::irq_handler_exit:
      fmt::format_to(out, FMT_COMPILE("irq={} ret=handled"), r.irq);
      break;
    case TraceEvent::softirq_entry:
    case TraceEvent::softirq_exit:
      fmt::format_to(out, FMT_COMPILE("vec={} [action={}]"), r.vec, r.vec < std::size(kSoftirqName) ? kSoftirqName[r.vec] : "");
      break;
    case TraceEvent::hrtimer_expire_entry:
      fmt::format_to(out, FMT_COMPILE("hrtimer={:#x} function={} now={}"), r.hrtimer,
                     kHrtimerFn[static_cast<size_t>(r.timer)], r.ts);
      break;
    case TraceEvent::hrtimer_expire_exit:
      fmt::format_to(out, FMT_COMPILE("hrtimer={:#x}"), r.hrtimer);
      break;
    default:  // schedlab: slice_ext_*
      fmt::format_to(out, FMT_COMPILE("comm={} pid={}"), r.a.comm, r.a.pid);
      break;
  }
  text_.push_back('\n');
}

// The event's entry as the ring buffer holds it: the common fields, then TP_STRUCT__entry.
void TraceWriter::emit_dat(const TraceRecord& r, const std::string_view* marker) {
  if (r.cpu < 0) return;
  while (cpus_.size() <= static_cast<size_t>(r.cpu)) cpus_.push_back(new CpuBuffer);
  uint8_t e[128] = {};
  size_t len = 8;
  const uint16_t type = marker ? TRACE_PRINT : kEventId[static_cast<size_t>(r.type)];
  put_at<uint16_t>(e, 0, type);
  put_at<uint8_t>(e, 2, r.irq_flags);
  put_at<uint8_t>(e, 3, 0);
  put_at<int32_t>(e, 4, r.curr.pid);
  if (marker) {
    scratch_.assign(reinterpret_cast<const char*>(e), 8);
    put(&scratch_, kTracingMarkWrite);
    scratch_ += *marker;
    scratch_ += '\0';
    cpus_[static_cast<size_t>(r.cpu)]->add(r.ts, reinterpret_cast<const uint8_t*>(scratch_.data()), scratch_.size());
    return;
  }
  switch (r.type) {
    case TraceEvent::sched_switch:
      put_comm(e, 8, r.a.comm);
      put_at<int32_t>(e, 24, r.a.pid);
      put_at<int32_t>(e, 28, r.a.prio);
      put_at<int64_t>(e, 32, r.state);
      put_comm(e, 40, r.b.comm);
      put_at<int32_t>(e, 56, r.b.pid);
      put_at<int32_t>(e, 60, r.b.prio);
      len = 64;
      break;
    case TraceEvent::sched_wakeup:
    case TraceEvent::sched_wakeup_new:
      put_comm(e, 8, r.a.comm);
      put_at<int32_t>(e, 24, r.a.pid);
      put_at<int32_t>(e, 28, r.a.prio);
      put_at<int32_t>(e, 32, r.dest_cpu);
      len = 36;
      break;
    case TraceEvent::sched_migrate_task:
      put_comm(e, 8, r.a.comm);
      put_at<int32_t>(e, 24, r.a.pid);
      put_at<int32_t>(e, 28, r.a.prio);
      put_at<int32_t>(e, 32, r.orig_cpu);
      put_at<int32_t>(e, 36, r.dest_cpu);
      len = 40;
      break;
    case TraceEvent::sched_process_fork:
      put_comm(e, 8, r.a.comm);
      put_at<int32_t>(e, 24, r.a.pid);
      put_comm(e, 28, r.b.comm);
      put_at<int32_t>(e, 44, r.b.pid);
      len = 48;
      break;
    case TraceEvent::sched_process_exit:
      put_comm(e, 8, r.a.comm);
      put_at<int32_t>(e, 24, r.a.pid);
      put_at<int32_t>(e, 28, r.a.prio);
      len = 32;
      break;
    case TraceEvent::irq_handler_entry: {
      // __data_loc: (length << 16) | offset of the string after the fixed fields.
      const size_t n = std::min<size_t>(std::strlen(r.name), 64) + 1;
      put_at<int32_t>(e, 8, r.irq);
      put_at<uint32_t>(e, 12, static_cast<uint32_t>(n << 16 | 16));
      std::memcpy(e + 16, r.name, n - 1);
      e[16 + n - 1] = 0;
      len = 16 + n;
      break;
    }
    case TraceEvent::irq_handler_exit:
      put_at<int32_t>(e, 8, r.irq);
      put_at<int32_t>(e, 12, 1);
      len = 16;
      break;
    case TraceEvent::softirq_entry:
    case TraceEvent::softirq_exit:
      put_at<uint32_t>(e, 8, r.vec);
      len = 12;
      break;
    case TraceEvent::hrtimer_expire_entry:
      put_at<uint64_t>(e, 8, r.hrtimer);
      put_at<int64_t>(e, 16, r.ts);
      put_at<uint64_t>(e, 24, hrtimer_fn_addr(r.timer));
      len = 32;
      break;
    case TraceEvent::hrtimer_expire_exit:
      put_at<uint64_t>(e, 8, r.hrtimer);
      len = 16;
      break;
    default:  // schedlab: slice_ext_*
      put_comm(e, 8, r.a.comm);
      put_at<int32_t>(e, 24, r.a.pid);
      len = 28;
      break;
  }
  cpus_[static_cast<size_t>(r.cpu)]->add(r.ts, e, len);
}

std::string TraceWriter::finish(int nr_cpus) {
  if (format_ == Format::Text) {
    std::string head = fmt::format(
        "# tracer: nop\n"
        "#\n"
        "# entries-in-buffer/entries-written: {}/{}   #P:{}\n"
        "#\n"
        "#                                _-----=> irqs-off/BH-disabled\n"
        "#                               / _----=> need-resched\n"
        "#                              | / _---=> hardirq/softirq\n"
        "#                              || / _--=> preempt-depth\n"
        "#                              ||| / _-=> migrate-disable\n"
        "#                              |||| /     delay\n"
        "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
        "#              | |         |   |||||     |         |\n",
        nr_events_, nr_events_, nr_cpus);
    head.append(text_.data(), text_.size());
    return head;
  }
  std::string s;
  s += std::string("\x17\x08\x44tracing", 10);
  s += std::string("6\0", 2);
  put<uint8_t>(&s, 0);  // little endian
  put<uint8_t>(&s, 8);  // sizeof(long)
  put<uint32_t>(&s, static_cast<uint32_t>(kPageSize));
  s += std::string("header_page\0", 12);
  put<uint64_t>(&s, std::strlen(kHeaderPage));
  s += kHeaderPage;
  s += std::string("header_event\0", 13);
  put<uint64_t>(&s, std::strlen(kHeaderEvent));
  s += kHeaderEvent;
  const std::string print = ftrace_print_format();
  put<uint32_t>(&s, 1);
  put<uint64_t>(&s, print.size());
  s += print;
  const auto systems = event_formats();
  put<uint32_t>(&s, static_cast<uint32_t>(systems.size()));
  for (const auto& [system, events] : systems) {
    s += system;
    s += '\0';
    put<uint32_t>(&s, static_cast<uint32_t>(events.size()));
    for (const std::string& f : events) {
      put<uint64_t>(&s, f.size());
      s += f;
    }
  }
  std::string kallsyms;
  for (size_t i = 0; i < std::size(kHrtimerFn); ++i)
    kallsyms += fmt::format("{:016x} t {}\n", hrtimer_fn_addr(static_cast<kernel::TraceHrtimer>(i)), kHrtimerFn[i]);
  kallsyms += fmt::format("{:016x} T tracing_mark_write\n", kTracingMarkWrite);
  put<uint32_t>(&s, static_cast<uint32_t>(kallsyms.size()));
  s += kallsyms;
  put<uint32_t>(&s, 0);  // no trace_printk formats
  std::string cmdlines;
  for (size_t pid = 0; pid < comms_.size(); ++pid)
    if (!comms_[pid].empty()) cmdlines += fmt::format("{} {}\n", pid, comms_[pid]);
  put<uint64_t>(&s, cmdlines.size());
  s += cmdlines;
  while (cpus_.size() < static_cast<size_t>(nr_cpus)) cpus_.push_back(new CpuBuffer);
  put<uint32_t>(&s, static_cast<uint32_t>(cpus_.size()));
  s += std::string("flyrecord\0", 10);
  uint64_t offset = (s.size() + 16 * cpus_.size() + kPageSize - 1) / kPageSize * kPageSize;
  for (const CpuBuffer* b : cpus_) {
    put<uint64_t>(&s, offset);
    put<uint64_t>(&s, b->pages.size());
    offset += b->pages.size();
  }
  s.resize((s.size() + kPageSize - 1) / kPageSize * kPageSize, '\0');
  for (const CpuBuffer* b : cpus_) s += b->pages;
  return s;
}

}  // namespace trace
