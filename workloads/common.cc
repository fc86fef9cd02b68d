// Shared workload pieces: distributions, policies, hogs.
#include "workloads/common.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "sim/parse.h"

namespace workloads {

int64_t round_half_away(double x) {
  if (!(std::fabs(x) < 0x1p52)) return std::llround(x);
  const int64_t i = static_cast<int64_t>(x);  // toward zero
  const double f = x - static_cast<double>(i);
  return f >= 0.5 ? i + 1 : f <= -0.5 ? i - 1 : i;
}

namespace {

// y = 2^e m with m in [1, 2), and m in the i-th of 64 equal slices of [1, 2), of centre
// c = (2i + 129) / 128: ln y = e ln 2 + ln c + log1p(r), r = (m - c) / c. m - c is exact
// (both in [1, 2), 8 bits of c) and |r| <= 2^-7, so the degree-7 polynomial's truncation
// (|r|^8 / 8) is below 2^-59. One 16-byte entry per slice: one cache line per draw.
struct alignas(16) LogEntry {
  double inv_c, log_c;
};
struct LogTable {
  LogEntry e[64];
  LogTable() {
    for (int i = 0; i < 64; ++i) {
      const double c = (2 * i + 129) * 0x1p-7;
      e[i] = {1.0 / c, std::log(c)};
    }
  }
};
const LogTable log_table;

// Error: ln 2 and the table's ln c are within an ulp (< 2^-53 absolutely for |e| = 1, |e| ulps
// of ln 2 otherwise), r within 2 ulps relatively, the polynomial and the sums a few ulps of
// their parts. For e = -1 (y in [1/2, 31/32]) the sum cancels down to at least ln(32/31) >
// 2^-5 from parts below 1, so the result is within 2^-47 relatively; for e <= -2 the result
// is at least (|e| - 1) ln 2 and within about 2^-50. tests/workloads pins the bound. The
// polynomial is evaluated in powers of r (Estrin) for a short dependency chain.
inline double log_below_one_inline(double y) {
  const uint64_t bits = std::bit_cast<uint64_t>(y);
  const int e = static_cast<int>(bits >> 52) - 1023;
  const unsigned i = static_cast<unsigned>(bits >> 46) & 63;
  const double m = std::bit_cast<double>((bits & ((uint64_t{1} << 52) - 1)) | 0x3ff0000000000000);
  const LogEntry& t = log_table.e[i];
  const double r = (m - (2 * static_cast<int>(i) + 129) * 0x1p-7) * t.inv_c;
  const double r2 = r * r;
  const double q = (-0.5 + r * (1.0 / 3)) + r2 * (-0.25 + r * 0.2) + r2 * r2 * (-1.0 / 6 + r * (1.0 / 7));
  return e * 0x1.62e42fefa39efp-1 + (t.log_c + (r + r2 * q));
}

}  // namespace

double log_below_one(double y) { return log_below_one_inline(y); }

int64_t round_exponential(double mean, double u) {
  // 1 - u is exact (u is a multiple of 2^-53 in [0, 1)); log_below_one() (u >= 1/32) is
  // within 2^-46 of ln(1 - u) relatively and glibc's log() and log1p() within 1 ulp, so the
  // product and the log1p() one are far less than 2^-40 of x apart. x is never negative
  // (mean >= 0), so it rounds to i or i + 1 by which side of i + 0.5 it is on; 2^-40 of x
  // from that boundary, both products agree.
  const double x = -mean * (u >= 0x1p-5 ? log_below_one_inline(1.0 - u) : std::log(1.0 - u));
  if (x < 0x1p36) {
    const int64_t i = static_cast<int64_t>(x);
    const double f = x - static_cast<double>(i);
    if (std::fabs(f - 0.5) > x * 0x1p-40) return f > 0.5 ? i + 1 : i;
  }
  return round_half_away(-mean * std::log1p(-u));
}

int64_t Dist::sample(sim::Rng& rng) const {
  switch (kind) {
    case Const: return a;
    case Uniform: return uniform(rng);
    case Exp: return round_exponential(static_cast<double>(a), rng.uniform01());
    case Normal:
      return std::max<int64_t>(
          0, round_half_away(rng.normal(static_cast<double>(a), static_cast<double>(b))));
  }
  return a;
}

double Dist::mean() const {
  switch (kind) {
    case Uniform: return (static_cast<double>(a) + static_cast<double>(b)) / 2;
    default: return static_cast<double>(a);
  }
}

std::string parse_dist(const std::string& param, const std::string& spec, Dist* out) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t colon = spec.find(':', start);
    parts.push_back(spec.substr(start, colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  auto dur = [&](const std::string& s, int64_t* v) { return sim::parse_duration(s, v) && *v >= 0; };
  const std::string bad = param + ": expected a duration (5us) or uniform:A:B, exp:MEAN, "
                                  "normal:MEAN:SD with durations >= 0 (got '" + spec + "')";
  Dist d;
  if (parts.size() == 1) {
    if (!dur(parts[0], &d.a)) return bad;
  } else if (parts[0] == "uniform" && parts.size() == 3) {
    if (!dur(parts[1], &d.a) || !dur(parts[2], &d.b) || d.b < d.a) return bad;
    d = Dist::uniform_dist(d.a, d.b);
  } else if (parts[0] == "exp" && parts.size() == 2) {
    d.kind = Dist::Exp;
    if (!dur(parts[1], &d.a)) return bad;
  } else if (parts[0] == "normal" && parts.size() == 3) {
    d.kind = Dist::Normal;
    if (!dur(parts[1], &d.a) || !dur(parts[2], &d.b)) return bad;
  } else {
    return bad;
  }
  *out = d;
  return "";
}

std::string parse_policy(const std::string& param, const std::string& s, int* policy) {
  if (s == "normal" || s == "other") *policy = SCHED_NORMAL;
  else if (s == "batch") *policy = SCHED_BATCH;
  else if (s == "idle") *policy = SCHED_IDLE;
  else if (s == "fifo") *policy = SCHED_FIFO;
  else if (s == "rr") *policy = SCHED_RR;
  else return param + ": unknown policy '" + s + "' (choose normal, batch, idle, fifo, rr)";
  return "";
}

int rt_priority_for(int policy) { return policy == SCHED_FIFO || policy == SCHED_RR ? 1 : 0; }

std::string thread_attr(kernel::Kernel& k, const char* comm, int policy, int nice,
                        kernel::TaskAttr* attr) {
  *attr = kernel::TaskAttr{};
  attr->comm = comm;
  attr->policy = policy;
  attr->nice = nice;
  attr->rt_priority = rt_priority_for(policy);
  return k.validate_attr(*attr);
}

const char* policy_name(int policy) {
  switch (policy) {
    case SCHED_NORMAL: return "normal";
    case SCHED_BATCH: return "batch";
    case SCHED_IDLE: return "idle";
    case SCHED_FIFO: return "fifo";
    case SCHED_RR: return "rr";
  }
  return "?";
}

ParamSpec hogs_start_param() {
  return {"hogs_start", "before",
          "fork the hogs before the workload's threads (as schedlab real does) or after them"};
}

ParamSpec ext_param(const std::string& users) {
  std::string names;
  for (int i = 0; i < kernel::kNrSliceExtAbi; ++i)
    names += (i ? ", " : "") + std::string(kernel::slice_ext_abi_name(static_cast<kernel::SliceExtAbi>(i)));
  return {"ext", "none", "slice extension " + users + ": " + names};
}

ParamSpec policy_param(const std::string& def, const std::string& whose) {
  return {"policy", def, whose + " policy: normal, batch, idle, fifo, rr"};
}

ParamSpec nice_param(const std::string& name, const std::string& whose) {
  return {name, "0", "nice value of " + whose + " (-20..19)"};
}

ParamSpec hogs_as_param() {
  return {"hogs_as", "threads",
          "where the hogs run, as schedlab real --hogs-as: threads (the workload's session), session "
          "(a process in a new session: its own autogroup), cgroup (a new session, in the cgroup " +
              std::string(kHogsCgroup) + ")"};
}

std::string parse_hogs_as(const Params& p, HogsAs* as) {
  const std::string v = p.get("hogs_as");
  if (v == "threads")
    *as = HogsAs::kThreads;
  else if (v == "session")
    *as = HogsAs::kSession;
  else if (v == "cgroup")
    *as = HogsAs::kCgroup;
  else
    return "hogs_as: expected threads, session or cgroup (got '" + v + "')";
  return "";
}

std::string parse_hogs_start(const Params& p, bool* before) {
  const std::string v = p.get("hogs_start");
  if (v != "before" && v != "after") return "hogs_start: expected before or after (got '" + v + "')";
  *before = v == "before";
  return "";
}

user::Program hog_program(user::Thread& t) {
  for (;;) co_await t.compute(sim::kNsecPerSec);
}

std::string spawn_hogs(kernel::Kernel& k, int n, int nice, int policy, uint64_t seed, HogsAs as) {
  if (n <= 0) return "";
  kernel::TaskAttr attr;
  if (std::string e = thread_attr(k, "hog", policy, nice, &attr); !e.empty()) return "hog_" + e;
  // A separate program's process calls setsid() (its own autogroup); in a cgroup it is in
  // that cgroup's group instead.
  const int sid = k.current_session();
  if (as != HogsAs::kThreads) k.setsid();
  if (as == HogsAs::kCgroup) attr.group = k.task_group_at(kHogsCgroup);
  const int tgid = k.create_process("hog");
  k.use_session(sid);
  for (int i = 0; i < n; ++i) {
    auto th = std::make_unique<user::Thread>(&k, sim::Rng(seed, 0x400000 + i));
    th->start(hog_program(*th));
    k.create_thread(tgid, attr, std::move(th));
  }
  return "";
}

namespace {
// Wakeups come from timers, a Poisson process of its own: the next one is due a random time
// after the previous one was due, however long that one waited for the CPU (a late one is
// followed at once by any already due). The thread starts asleep; its first timer is `due`.
user::Program background_program(user::Thread& t, int64_t due, double mean_sleep_ns, int64_t run_ns) {
  for (;;) {
    co_await t.compute(run_ns);
    due += std::max<int64_t>(1, round_exponential(mean_sleep_ns, t.rng().uniform01()));
    if (due > t.now()) co_await t.sleep_until(due);
  }
}
}  // namespace

std::string spawn_background(kernel::Kernel& k, uint64_t seed) {
  const hw::Costs& c = k.machine().costs;
  if (c.background_wakeups_per_s <= 0) return "";
  kernel::TaskAttr attr;
  attr.comm = "background";
  attr.preexisting = true;
  // The rest of the system is other programs, started from other shells or by the service
  // manager: never in the scenario's session, so with autogroup never in its group
  // (task_wants_autogroup() puts a task in its own session's autogroup).
  const int sid = k.current_session();
  k.setsid();
  const int tgid = k.create_process("background");
  k.use_session(sid);
  const double mean_sleep_ns = 1e9 / c.background_wakeups_per_s;
  for (int cpu = 0; cpu < k.nr_cpus(); ++cpu) {
    attr.cpus = {cpu};
    auto th = std::make_unique<user::Thread>(&k, sim::Rng(seed, 0x500000 + static_cast<uint64_t>(cpu)));
    const int64_t first = std::max<int64_t>(1, round_exponential(mean_sleep_ns, th->rng().uniform01()));
    th->start(background_program(*th, first, mean_sleep_ns, c.background_run_ns));
    k.create_thread(tgid, attr, std::move(th), first);
  }
  return "";
}

report::LatencySummary latency_summary(const std::string& name, const sim::Histogram& h) {
  const sim::Summary& a = h.summary();
  report::LatencySummary l;
  l.name = name;
  l.count = a.count;
  l.min_ns = a.count ? a.min : 0;
  l.p50_ns = h.percentile(0.5);
  l.p99_ns = h.percentile(0.99);
  l.p999_ns = h.percentile(0.999);
  l.max_ns = a.count ? a.max : 0;
  l.mean_ns = a.mean();
  return l;
}

int64_t process_run_ns(const kernel::KernelStats& ks, int tgid) {
  int64_t sum = 0;
  for (const kernel::TaskStats& t : ks.tasks)
    if (t.tgid == tgid) sum += static_cast<int64_t>(t.run_ns);
  return sum;
}

}  // namespace workloads
