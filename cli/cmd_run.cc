// `schedlab run`: one experiment, its table and optionally its JSON.
#include "cli/cli.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <iostream>

#include "report/csv.h"
#include "report/json.h"
#include "report/output_file.h"
#include "report/table.h"
#include "trace/trace_writer.h"

namespace cli {

int do_run(const RunOptions& o) {
  scenario::Experiment e;
  if (std::string err = build_experiment(o, &e); !err.empty()) return fail(err);
  long long proc_pid = 0;
  if (!o.proc.empty())
    if (std::string err = parse_int_option("--proc", o.proc, 1, INT32_MAX, &proc_pid); !err.empty())
      return fail(err);
  long long limit = INT_MAX;
  if (!o.limit.empty()) {
    if (std::string err = parse_int_option("--limit", o.limit, 0, INT_MAX, &limit); !err.empty())
      return fail(err);
    if (!o.per_task) return fail("--limit: caps the rows of --per-task, which is not given (got '" + o.limit + "')");
  }
  if (std::string err = check_stdout_outputs(o); !err.empty()) return fail(err);
  const bool table = o.json != "-" && o.csv != "-";
  if (proc_pid && !table)
    return fail("--proc: the dump is printed with the table, which --" +
                std::string(o.json == "-" ? "json" : "csv") + " - suppresses");
  // The destination is checked (its temporary created) before the run, not after it.
  report::OutputFile out, csv;
  std::string werr;
  if (!o.json.empty() && !out.open(o.json, &werr)) return fail(werr);
  // --trace: its options are checked and its file opened before the run too.
  if (o.trace.empty() && !(o.trace_window.empty() && o.trace_format.empty()))
    return fail(o.trace_window.empty() ? "--trace-format: needs --trace FILE"
                                       : "--trace-window: needs --trace FILE");
  if (!o.trace.empty() && o.trace == o.json)
    return fail("--trace: '" + o.trace + "' is also the --json destination");
  trace::Format trace_format = trace::Format::Text;
  trace::Window trace_window;
  std::unique_ptr<trace::TraceWriter> tracer;
  report::OutputFile trace_out;
  if (!o.trace.empty()) {
    if (std::string err = trace::parse_format(o.trace_format, o.trace, &trace_format); !err.empty())
      return fail(err);
    if (!o.trace_window.empty())
      if (std::string err = trace::parse_window(o.trace_window, &trace_window); !err.empty())
        return fail(err);
    if (!trace_out.open(o.trace, &werr)) return fail(werr);
    tracer = std::make_unique<trace::TraceWriter>(trace_format, trace_window);
  }
  if (!o.csv.empty() && !csv.open(o.csv, &werr)) return fail(werr);

  report::Results r;
  ProgressLine progress(e.duration_ns);
  if (std::string err = scenario::run(e, &r, std::ref(progress), tracer.get()); !err.empty())
    return fail(err);
  // Checked before anything is written: a bad pid leaves no output file.
  if (proc_pid && std::none_of(r.tasks.begin(), r.tasks.end(),
                               [&](const report::TaskResult& t) { return t.pid == proc_pid; }))
    return fail("--proc: no task with pid " + std::to_string(proc_pid));
  if (tracer && !trace_out.commit(tracer->finish(r.cpus), &werr)) return fail(werr);
  if (!o.json.empty() && !out.commit(report::render_json(r), &werr)) return fail(werr);
  if (!o.csv.empty() && !csv.commit(report::render_run_csv(r), &werr)) return fail(werr);
  if (table) {
    report::TableOptions t;
    t.per_task = o.per_task;
    t.max_tasks = static_cast<int>(limit);
    t.per_cpu = o.per_cpu;
    std::cout << report::render_table(r, t);
    for (const report::TaskResult& task : r.tasks)
      if (proc_pid && task.pid == proc_pid)
        std::cout << "\n" << report::render_proc_sched(task, report::nr_threads(r, task.tgid));
  }
  return 0;
}

}  // namespace cli
