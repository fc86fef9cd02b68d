// Pieces shared by workloads: random durations from a distribution spec, policy names,
// CPU hog threads, and collecting task results of a process.
#pragma once
#include <string>

#include "kernel/kernel.h"
#include "sim/rng.h"
#include "sim/stats.h"
#include "user/thread.h"
#include "workloads/workload.h"

namespace workloads {

// A duration distribution: "5us" (constant), "uniform:5us:15us", "exp:100us",
// "normal:10us:2us" (truncated at 0).
struct Dist {
  enum Kind { Const, Uniform, Exp, Normal } kind = Const;
  int64_t a = 0, b = 0;
  sim::UniformInt uniform;  // Uniform: the draw over [a, b]; build with uniform_dist()
  static Dist uniform_dist(int64_t lo, int64_t hi) {
    Dist d;
    d.kind = Uniform;
    d.a = lo;
    d.b = hi;
    d.uniform = sim::UniformInt(lo, hi);
    return d;
  }
  int64_t sample(sim::Rng& rng) const;
  double mean() const;
  // Every draw is 0 (draws are never negative).
  bool always_zero() const { return kind == Normal ? a <= 0 && b == 0 : mean() <= 0; }
};
// "" on success, else an error naming `param`.
// std::llround (half away from zero) without the library call, equal to it bit for bit:
// below 2^52 the fraction x - trunc(x) is exact. (Sampling is on every event's path.)
int64_t round_half_away(double x);
// round_half_away(-mean * std::log1p(-u)), bit for bit: the exponential draw of
// sim::Rng::exponential() from u = uniform01(), rounded to ns. REQUIRES mean >= 0 and u in
// [0, 1) a multiple of 2^-53 (as uniform01() makes). Mostly computed with log_below_one(1 - u)
// (u >= 1/32) or log(1 - u), far cheaper than log1p() (every think time and compute step
// draws one), falling back to log1p() within 2^-40 of x from a rounding boundary.
int64_t round_exponential(double mean, double u);
// ln(y) for y in [2^-53, 31/32], a multiple of 2^-53, within 2^-46 of it relatively (below
// glibc's log(): no call, no errno, a 64-entry table and a degree-7 polynomial). What
// round_exponential() computes its first x with for u >= 1/32.
double log_below_one(double y);

std::string parse_dist(const std::string& param, const std::string& spec, Dist* out);

// "normal", "batch", "idle", "fifo", "rr" <-> SCHED_*.
std::string parse_policy(const std::string& param, const std::string& s, int* policy);
// The RT priority a workload gives threads of `policy`: 1 (the lowest) for SCHED_FIFO and
// SCHED_RR, 0 otherwise.
int rt_priority_for(int policy);
// The attributes of a workload's threads: `comm`, `policy` with rt_priority_for(policy),
// `nice`. Returns what k.validate_attr() says of them ("" if the kernel takes them).
std::string thread_attr(kernel::Kernel& k, const char* comm, int policy, int nice,
                        kernel::TaskAttr* attr);
const char* policy_name(int policy);

// The pure CPU hog program: compute forever, in 1 s steps.
user::Program hog_program(user::Thread& t);

// Parameters several workloads take, declared once (name, default, help) beside the parser
// that reads each: a workload lists them in its WorkloadInfo::params.
// `hogs_start` (parse_hogs_start()).
ParamSpec hogs_start_param();
// `ext` (parse_slice_abi(), workloads/lock_common.h): the help names `users` ("the clients
// use") and lists the registered designs (kernel/slice_ext_designs.h).
ParamSpec ext_param(const std::string& users);
// `policy` (parse_policy()), with its default and whose policy it is ("clients'").
ParamSpec policy_param(const std::string& def, const std::string& whose);
// `nice` of `whose` threads (read with get_int_in(name, -20, 19)); `name` "nice" or "hog_nice".
ParamSpec nice_param(const std::string& name, const std::string& whose);

// `hogs_start`: "before" (the default) forks the hogs before the workload's own threads, as a
// hog started beside a benchmark and `schedlab real` do; "after" forks them last. Fork
// placement makes the order matter (docs/model.md, "Fork placement").
std::string parse_hogs_start(const Params& p, bool* before);
// `hogs_as`: where the hog process runs, as `schedlab real --hogs-as` starts it. kThreads
// ("threads", the default): in the workload's session (with autogroup, in its group);
// kSession ("session"): in a new session (setsid(), so an autogroup of its own); kCgroup
// ("cgroup"): in a new session and in the cgroup kHogsCgroup, cpu.weight 100 (a task in a
// cgroup is in no autogroup: task_wants_autogroup()).
enum class HogsAs { kThreads, kSession, kCgroup };
inline constexpr const char* kHogsCgroup = "/schedlab-hogs";
ParamSpec hogs_as_param();
std::string parse_hogs_as(const Params& p, HogsAs* as);
// Creates `n` hog threads in a new process "hog", placed as `as` says; returns "" or an error.
std::string spawn_hogs(kernel::Kernel& k, int n, int nice, int policy, uint64_t seed,
                       HogsAs as = HogsAs::kThreads);

// The machine's background activity (costs.background_wakeups_per_s, background_run_ns):
// one thread "background" pinned to each CPU, asleep when the scenario starts (TaskAttr::
// preexisting), woken by timers due at exponential intervals of mean 1 s / rate (a Poisson
// process), that runs background_run_ns at each. Nothing when the rate is 0. Its process is in
// a session of its own (other programs'), so with autogroup it is a group of its own. Returns
// "" or an error.
std::string spawn_background(kernel::Kernel& k, uint64_t seed);

// A latency distribution as the results report it.
report::LatencySummary latency_summary(const std::string& name, const sim::Histogram& h);

// Sums run time of the threads of process `tgid`.
int64_t process_run_ns(const kernel::KernelStats& ks, int tgid);

}  // namespace workloads
