// `schedlab real <workload> [options]`: the runner's command line over CLI11. Exit codes as the
// rest of schedlab: 0 success, 1 internal failure, 2 bad input (one line on stderr naming the
// parameter) or a mode this kernel cannot run.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "real/rt_app.h"
#include "real/runner.h"

namespace real {

namespace {

constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;

int fail(const std::string& msg) {
  std::fprintf(stderr, "schedlab real: error: %s\n", msg.c_str());
  return kExitBadInput;
}

// Parses the words after "real" with `app` (CLI11 takes them last first): -1 to go on, else
// the exit code (help printed, or the one-line error).
int parse_args(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "schedlab real: error: %s (see --help)\n", e.what());
    return kExitBadInput;
  }
  return -1;
}

// Options one workload takes and the other does not: a clear error beats a silent no-op.
std::string check_applicable(Workload w, const CLI::App& app) {
  const bool es2 = w == Workload::kExtendSched2;
  if (es2 && app.count("--clients")) return "--clients applies to locktable; extend-sched2 takes --threads";
  if (!es2 && app.count("--threads")) return "--threads applies to extend-sched2; locktable takes --clients";
  if (!es2 && app.count("--cs-iterations"))
    return "--cs-iterations applies to extend-sched2; locktable takes --cs";
  if (es2 && (app.count("--query") || app.count("--cs")))
    return "--query and --cs apply to locktable; extend-sched2 takes --cs-iterations";
  return "";
}

// `schedlab real mm_cid_compaction_test [options]`: not a lock workload; its own options.
int mm_cid_cli(const std::vector<std::string>& args) {
  CLI::App app{"Runs the mm_cid compaction selftest's procedure on this host's kernel, many times "
               "(docs/calibration.md)."};
  app.name("schedlab real mm_cid_compaction_test");
  std::string workload, period = "50ms", busy = "0ms", cpus;
  int runs = 20, checks = 10;
  app.add_option("workload", workload, "mm_cid_compaction_test")->required();
  app.add_option("--runs", runs, "runs, each in a fresh process, 1..10000 (default 20)");
  app.add_option("--period", period, "each sleep, before the election and between checks (default 50ms)");
  app.add_option("--checks", checks, "reads of mm_cid before the leader fails, 1..1000 (default 10)");
  app.add_option("--busy", busy, "CPU time the leader burns before each sleep (default 0ms)");
  app.add_option("--cpus", cpus, "CPU list, one thread each (default: inherited affinity)");
  if (int rc = parse_args(app, args); rc >= 0) return rc;
  if (runs < 1 || runs > 10000) return fail("--runs: must be in 1..10000 (got " + std::to_string(runs) + ")");
  if (checks < 1 || checks > 1000) return fail("--checks: must be in 1..1000 (got " + std::to_string(checks) + ")");
  int64_t period_ns = 0, busy_ns = 0;
  if (std::string err = parse_duration("--period", period, &period_ns); !err.empty()) return fail(err);
  if (period_ns <= 0) return fail("--period: must be > 0 (got '" + period + "')");
  if (std::string err = parse_duration("--busy", busy, &busy_ns); !err.empty()) return fail(err);
  std::vector<int> cpu_list;
  if (app.count("--cpus"))
    if (std::string err = parse_cpu_list("--cpus", cpus, &cpu_list); !err.empty()) return fail(err);
  return mm_cid_main(runs, period_ns, checks, busy_ns, cpu_list);
}

// `schedlab real --rt-app FILE.json [--duration S] [--compare-sim]`: rt-app itself runs the
// file; its logs are summarised per task and, with --compare-sim, set beside the simulator's.
int rt_app_cli(const std::vector<std::string>& args) {
  CLI::App app{"Runs an rt-app JSON description with rt-app (Debian's rt-app 1.0) on this host and "
               "summarises its logs per task (docs/real.md)."};
  app.name("schedlab real --rt-app");
  std::string file, duration, binary = "/usr/bin/rt-app";
  bool compare_sim = false;
  app.add_option("--rt-app", file, "the rt-app JSON file")->required();
  app.add_option("--duration", duration,
                 "whole seconds, e.g. 2s, replacing global.duration (default: the file's)");
  app.add_option("--rt-app-binary", binary, "the rt-app program (default /usr/bin/rt-app)");
  std::string timeout;
  app.add_option("--timeout", timeout,
                 "wall time after which rt-app is stopped, e.g. 30s (default: the duration and 10s, "
                 "or 60s without one)");
  app.add_flag("--compare-sim", compare_sim, "also run the file in the simulator on the host profile");
  if (int rc = parse_args(app, args); rc >= 0) return rc;
  int64_t duration_s = 0;
  if (app.count("--duration")) {
    int64_t ns = 0;
    if (std::string err = parse_duration("--duration", duration, &ns); !err.empty()) return fail(err);
    if (ns <= 0 || ns % 1000000000 != 0)
      return fail("--duration: rt-app 1.0 takes whole seconds, at least 1s (got '" + duration + "')");
    duration_s = ns / 1000000000;
  }
  int64_t timeout_s = 0;
  if (app.count("--timeout")) {
    int64_t ns = 0;
    if (std::string err = parse_duration("--timeout", timeout, &ns); !err.empty()) return fail(err);
    if (ns < 1000000000) return fail("--timeout: at least 1s (got '" + timeout + "')");
    timeout_s = ns / 1000000000;
  }
  RtAppCompareHook hook = rt_app_compare_hook();
  if (compare_sim && hook == nullptr) return fail("--compare-sim: not available in this build");
  // The simulator's side is checked before rt-app runs, so that a file it cannot model fails
  // at once.
  if (compare_sim)
    if (int rc = hook(file, duration_s, nullptr); rc != 0) return rc;
  RtAppRun r;
  if (std::string err = run_rt_app(binary, file, duration_s, timeout_s, &r); !err.empty()) return fail(err);
  print_rt_app_run(r, std::cout);
  std::cout.flush();
  return compare_sim ? hook(file, duration_s, &r) : 0;
}

}  // namespace

int real_main(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "mm_cid_compaction_test") return mm_cid_cli(args);
  for (const std::string& a : args)
    if (a == "--rt-app" || a.rfind("--rt-app=", 0) == 0) return rt_app_cli(args);
  CLI::App app{
      "Runs a lock workload with real threads on this host, asking the kernel for time slice "
      "extensions (docs/real.md).\nWorkloads: extend-sched2 (the Dec 2024 benchmark), "
      "locktable (a database lock table), mm_cid_compaction_test (the mm_cid selftest; its own options).\n"
      "schedlab real --rt-app FILE.json runs an rt-app description with rt-app (see --rt-app --help)."};
  app.name("schedlab real");
  std::string workload, duration, cpus, query, cs;
  int threads = 0, clients = 0, hogs = 0, locks = 0, mode = 0;
  int64_t cs_iterations = 0;
  bool compare_sim = false;
  app.add_option("workload", workload, "extend-sched2 | locktable")->required();
  app.add_option("--threads", threads, "extend-sched2 worker threads (default: CPUs available)");
  app.add_option("--clients", clients, "locktable client threads (default: CPUs available)");
  app.add_option("--hogs", hogs, "CPU hog threads beside the workload (default 0)");
  std::string hogs_as;
  app.add_option("--hogs-as", hogs_as,
                 "where the hogs run: threads (of this process, default), session (a separate "
                 "process in a new session, started first), cgroup (as session, and in a new "
                 "cpu cgroup)");
  app.add_option("--locks", locks,
                 "lock objects; thread i uses i % locks (default: extend-sched2 max(1, threads/10), "
                 "locktable 1)");
  app.add_option("--duration", duration, "wall time, e.g. 2s, 500ms (default: 180s / 10s)");
  app.add_option("--mode", mode, "0 none, 1 RFC task_getshared, 3 mainline rseq (default 0)");
  app.add_option("--cpus", cpus, "CPU list for every thread, e.g. 0-3,6 (default: inherited)");
  app.add_option("--cs-iterations", cs_iterations,
                 "extend-sched2 critical section loop iterations (default 3000000)");
  app.add_option("--query", query, "locktable work outside the lock (default 100us)");
  app.add_option("--cs", cs, "locktable critical section (default 10us)");
  app.add_flag("--compare-sim", compare_sim, "also run the simulator on the same parameters");

  if (int rc = parse_args(app, args); rc >= 0) return rc;

  Workload w;
  if (workload == "extend-sched2")
    w = Workload::kExtendSched2;
  else if (workload == "locktable")
    w = Workload::kLockTable;
  else
    return fail("unknown workload '" + workload + "' (extend-sched2, locktable, mm_cid_compaction_test)");
  if (std::string err = check_applicable(w, app); !err.empty()) return fail(err);

  Params p = default_params(w);
  if (app.count("--cpus")) {
    if (std::string err = parse_cpu_list("--cpus", cpus, &p.cpus); !err.empty()) return fail(err);
    p.threads = p.clients = static_cast<int>(p.cpus.size());  // one thread per listed CPU
  }
  if (app.count("--threads")) p.threads = threads;
  if (app.count("--clients")) p.clients = clients;
  if (app.count("--hogs")) p.hogs = hogs;
  if (app.count("--hogs-as")) {
    if (hogs_as == "threads")
      p.hogs_as = HogsAs::kThreads;
    else if (hogs_as == "session")
      p.hogs_as = HogsAs::kSession;
    else if (hogs_as == "cgroup")
      p.hogs_as = HogsAs::kCgroup;
    else
      return fail("--hogs-as: expected threads, session or cgroup (got '" + hogs_as + "')");
  }
  if (app.count("--locks")) p.locks = locks;
  if (app.count("--mode")) p.mode = mode;
  if (app.count("--cs-iterations")) p.cs_iterations = cs_iterations;
  for (auto [name, text, ns] : {std::tuple{"--duration", &duration, &p.duration_ns},
                                std::tuple{"--query", &query, &p.query_ns},
                                std::tuple{"--cs", &cs, &p.cs_ns}}) {
    if (!app.count(name)) continue;
    if (std::string err = parse_duration(name, *text, ns); !err.empty()) return fail(err);
  }
  if (std::string err = validate(p); !err.empty()) return fail(err);
  if (compare_sim && compare_hook() == nullptr) {
    std::fprintf(stderr, "schedlab real: compare-sim not available in this build\n");
    return kExitBadInput;
  }
  Backend backend;
  if (std::string err = check_mode(p, &backend); !err.empty()) return fail(err);

  RunResult r;
  if (std::string err = run(p, &r); !err.empty()) {
    std::fprintf(stderr, "schedlab real: error: %s\n", err.c_str());
    // A host that cannot place the hogs as asked (no cpu cgroup it may create) is like a
    // mode this kernel cannot run: exit 2.
    return err.rfind("--hogs-as ", 0) == 0 ? kExitBadInput : kExitInternal;
  }
  for (const std::string& n : r.notices) std::fprintf(stderr, "%s\n", n.c_str());
  print_result(r, std::cout);
  std::cout.flush();
  if (compare_sim) return compare_hook()(p, r);
  return 0;
}

}  // namespace real
