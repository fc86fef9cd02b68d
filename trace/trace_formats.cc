// The format files of the traced events (trace/trace_formats.h): the fields and print formats
// of the kernel's own tracepoints (include/trace/events/sched.h, irq.h, timer.h) as
// /sys/kernel/tracing/events/<system>/<event>/format shows them on x86-64.
#include "trace/trace_formats.h"

#include <fmt/format.h>

#include <initializer_list>

namespace trace {

const char* event_name(TraceEvent e) {
  static const char* const names[] = {
      "sched_switch", "sched_wakeup", "sched_wakeup_new", "sched_migrate_task",
      "sched_process_fork", "sched_process_exit", "irq_handler_entry", "irq_handler_exit",
      "softirq_entry", "softirq_exit", "hrtimer_expire_entry", "hrtimer_expire_exit",
      "slice_ext_request", "slice_ext_grant", "slice_ext_yield", "slice_ext_revoke",
      "slice_ext_expire"};
  static_assert(std::size(names) == static_cast<size_t>(TraceEvent::user_span_begin));
  return names[static_cast<size_t>(e)];
}


namespace {

struct Field {
  const char* type;  // as the format file declares it
  const char* name;  // with [N] for arrays
  int size;
  bool is_signed;
};

constexpr Field kCommon[] = {{"unsigned short", "common_type", 2, false},
                             {"unsigned char", "common_flags", 1, false},
                             {"unsigned char", "common_preempt_count", 1, false},
                             {"int", "common_pid", 4, true}};

std::string format_file(const char* name, uint16_t id, std::initializer_list<Field> fields,
                        const char* print_fmt) {
  std::string s = fmt::format("name: {}\nID: {}\nformat:\n", name, id);
  int off = 0;
  for (const Field& f : kCommon) {
    s += fmt::format("\tfield:{} {};\toffset:{};\tsize:{};\tsigned:{};\n", f.type, f.name, off, f.size,
                     f.is_signed ? 1 : 0);
    off += f.size;
  }
  s += "\n";
  for (const Field& f : fields) {
    s += fmt::format("\tfield:{} {};\toffset:{};\tsize:{};\tsigned:{};\n", f.type, f.name, off, f.size,
                     f.is_signed ? 1 : 0);
    off += f.size;
  }
  s += fmt::format("\nprint fmt: {}\n", print_fmt);
  return s;
}

constexpr Field kComm = {"char", "comm[16]", 16, false};
constexpr Field kPid = {"pid_t", "pid", 4, true};
constexpr Field kPrio = {"int", "prio", 4, true};

}  // namespace

std::string ftrace_print_format() {
  return format_file("print", TRACE_PRINT,
                     {{"unsigned long", "ip", 8, false}, {"char", "buf[]", 0, true}},
                     "\"%ps: %s\", (void *)REC->ip, REC->buf");
}

std::vector<std::pair<std::string, std::vector<std::string>>> event_formats() {
  auto id = [](TraceEvent e) { return kEventId[static_cast<size_t>(e)]; };
  const char* wakeup_fmt = "\"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu";
  const Field target = {"int", "target_cpu", 4, true};
  std::vector<std::string> sched = {
      format_file("sched_switch", id(TraceEvent::sched_switch),
                  {{"char", "prev_comm[16]", 16, false}, {"pid_t", "prev_pid", 4, true},
                   {"int", "prev_prio", 4, true}, {"long", "prev_state", 8, true},
                   {"char", "next_comm[16]", 16, false}, {"pid_t", "next_pid", 4, true},
                   {"int", "next_prio", 4, true}},
                  "\"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s "
                  "next_pid=%d next_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio, "
                  "(REC->prev_state & 0xff) ? __print_flags(REC->prev_state & 0xff, \"|\", "
                  "{ 0x01, \"S\" }, { 0x02, \"D\" }, { 0x04, \"T\" }, { 0x08, \"t\" }, "
                  "{ 0x10, \"X\" }, { 0x20, \"Z\" }, { 0x40, \"P\" }, { 0x80, \"I\" }) : \"R\", "
                  "REC->prev_state & 0x100 ? \"+\" : \"\", REC->next_comm, REC->next_pid, REC->next_prio"),
      format_file("sched_wakeup", id(TraceEvent::sched_wakeup), {kComm, kPid, kPrio, target}, wakeup_fmt),
      format_file("sched_wakeup_new", id(TraceEvent::sched_wakeup_new), {kComm, kPid, kPrio, target},
                  wakeup_fmt),
      format_file("sched_migrate_task", id(TraceEvent::sched_migrate_task),
                  {kComm, kPid, kPrio, {"int", "orig_cpu", 4, true}, {"int", "dest_cpu", 4, true}},
                  "\"comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d\", REC->comm, REC->pid, "
                  "REC->prio, REC->orig_cpu, REC->dest_cpu"),
      format_file("sched_process_fork", id(TraceEvent::sched_process_fork),
                  {{"char", "parent_comm[16]", 16, false}, {"pid_t", "parent_pid", 4, true},
                   {"char", "child_comm[16]", 16, false}, {"pid_t", "child_pid", 4, true}},
                  "\"comm=%s pid=%d child_comm=%s child_pid=%d\", REC->parent_comm, "
                  "REC->parent_pid, REC->child_comm, REC->child_pid"),
      format_file("sched_process_exit", id(TraceEvent::sched_process_exit), {kComm, kPid, kPrio},
                  "\"comm=%s pid=%d prio=%d\", REC->comm, REC->pid, REC->prio"),
  };
  std::string softirq_sym = "__print_symbolic(REC->vec";
  for (size_t i = 0; i < std::size(kSoftirqName); ++i)
    softirq_sym += fmt::format(", {{ {}, \"{}\" }}", i, kSoftirqName[i]);
  softirq_sym += ")";
  const Field vec = {"unsigned int", "vec", 4, false};
  std::vector<std::string> irq = {
      format_file("irq_handler_entry", id(TraceEvent::irq_handler_entry),
                  {{"int", "irq", 4, true}, {"__data_loc char[]", "name", 4, false}},
                  "\"irq=%d name=%s\", REC->irq, __get_str(name)"),
      format_file("irq_handler_exit", id(TraceEvent::irq_handler_exit),
                  {{"int", "irq", 4, true}, {"int", "ret", 4, true}},
                  "\"irq=%d ret=%s\", REC->irq, REC->ret ? \"handled\" : \"unhandled\""),
      format_file("softirq_entry", id(TraceEvent::softirq_entry), {vec},
                  ("\"vec=%u [action=%s]\", REC->vec, " + softirq_sym).c_str()),
      format_file("softirq_exit", id(TraceEvent::softirq_exit), {vec},
                  ("\"vec=%u [action=%s]\", REC->vec, " + softirq_sym).c_str()),
  };
  std::vector<std::string> timer = {
      format_file("hrtimer_expire_entry", id(TraceEvent::hrtimer_expire_entry),
                  {{"void *", "hrtimer", 8, false}, {"s64", "now", 8, true}, {"void *", "function", 8, false}},
                  "\"hrtimer=%p function=%ps now=%llu\", REC->hrtimer, REC->function, REC->now"),
      format_file("hrtimer_expire_exit", id(TraceEvent::hrtimer_expire_exit),
                  {{"void *", "hrtimer", 8, false}}, "\"hrtimer=%p\", REC->hrtimer"),
  };
  std::vector<std::string> schedlab;
  for (TraceEvent e : {TraceEvent::slice_ext_request, TraceEvent::slice_ext_grant, TraceEvent::slice_ext_yield,
                       TraceEvent::slice_ext_revoke, TraceEvent::slice_ext_expire})
    schedlab.push_back(format_file(event_name(e), id(e), {kComm, kPid},
                                   "\"comm=%s pid=%d\", REC->comm, REC->pid"));
  return {{"irq", irq}, {"sched", sched}, {"timer", timer}, {"schedlab", schedlab}};
}

// events/header_page and events/header_event of a 64-bit kernel.
extern const char kHeaderPage[];
const char kHeaderPage[] =
    "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
    "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
    "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
    "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";
const char kHeaderEvent[] =
    "# compressed entry header\n"
    "\ttype_len    :    5 bits\n"
    "\ttime_delta  :   27 bits\n"
    "\tarray       :   32 bits\n"
    "\n"
    "\tpadding     : type == 29\n"
    "\ttime_extend : type == 30\n"
    "\ttime_stamp : type == 31\n"
    "\tdata max type_len  == 28\n";


}  // namespace trace
