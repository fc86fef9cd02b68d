// rt-app on the host (real/rt_app.h): the file rewritten for a private log directory, rt-app
// run in a child process, its per-thread logs read back.
#include "real/rt_app.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "sim/relaxed_json.h"

namespace real {

namespace {

RtAppCompareHook g_rt_app_hook = nullptr;

std::string read_text(const std::string& path, bool* ok) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  *ok = static_cast<bool>(in);
  return ss.str();
}

// The last `n` non-empty lines of `text`, joined with " | " (an error stays one line).
std::string tail_lines(const std::string& text, int n) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) lines.push_back(l);
  std::string out;
  for (size_t i = lines.size() > static_cast<size_t>(n) ? lines.size() - n : 0; i < lines.size(); ++i)
    out += (out.empty() ? "" : " | ") + lines[i];
  return out;
}

// Removes the temporary directory on every way out.
struct TempDir {
  std::string path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

std::string parse_rt_app_log(const std::string& text, std::vector<RtAppLogRow>* rows) {
  static const char* const kCols[] = {"idx", "perf", "run", "period", "start", "end",
                                      "rel_st", "slack", "c_duration", "c_period", "wu_lat"};
  std::vector<int> col;  // field index of each header column in kCols, -1 if unknown
  std::istringstream in(text);
  int lineno = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineno;
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (line.rfind("#idx", 0) != 0) continue;  // "# Policy : ..." and other comments
      std::istringstream h(line.substr(1));
      col.clear();
      for (std::string name; h >> name;) {
        const auto it = std::find_if(std::begin(kCols), std::end(kCols), [&](const char* c) { return name == c; });
        col.push_back(it == std::end(kCols) ? -1 : static_cast<int>(it - std::begin(kCols)));
      }
      for (int need : {2, 7, 10})
        if (std::find(col.begin(), col.end(), need) == col.end())
          return "rt-app log line " + std::to_string(lineno) + ": no " + kCols[need] + " column in the header";
      continue;
    }
    if (col.empty()) return "rt-app log line " + std::to_string(lineno) + ": a row before the #idx header";
    std::istringstream f(line);
    RtAppLogRow r;
    int64_t* fields[] = {&r.idx, &r.perf, &r.run, &r.period, &r.start, &r.end,
                         &r.rel_st, &r.slack, &r.c_duration, &r.c_period, &r.wu_lat};
    size_t i = 0;
    for (std::string v; f >> v; ++i) {
      char* end = nullptr;
      const long long x = std::strtoll(v.c_str(), &end, 10);
      if (*end != '\0' || i >= col.size())
        return "rt-app log line " + std::to_string(lineno) + ": unexpected '" + v + "'";
      if (col[i] >= 0) *fields[col[i]] = x;
    }
    if (i != col.size())
      return "rt-app log line " + std::to_string(lineno) + ": " + std::to_string(i) + " fields, the header has " +
             std::to_string(col.size());
    rows->push_back(r);
  }
  return "";
}

std::string summarize_rt_app_logs(const std::string& dir, const std::string& basename,
                                  std::vector<RtAppTaskSummary>* out) {
  std::map<std::string, RtAppTaskSummary> by_task;
  std::error_code ec;
  const std::string prefix = basename + "-";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    // <basename>-<task>-<thread index>.log
    if (name.rfind(prefix, 0) != 0 || name.size() < prefix.size() + 4 ||
        name.compare(name.size() - 4, 4, ".log") != 0)
      continue;
    const std::string mid = name.substr(prefix.size(), name.size() - prefix.size() - 4);
    const size_t dash = mid.rfind('-');
    if (dash == std::string::npos || dash == 0) continue;
    const std::string task = mid.substr(0, dash);
    bool ok = false;
    const std::string text = read_text(entry.path().string(), &ok);
    std::vector<RtAppLogRow> rows;
    if (std::string err = parse_rt_app_log(text, &rows); !err.empty()) return name + ": " + err;
    RtAppTaskSummary& s = by_task[task];
    s.task = task;
    s.threads++;
    for (const RtAppLogRow& r : rows) {
      const bool first = s.loops == 0;
      s.loops++;
      s.run_mean_us += static_cast<double>(r.run);  // sums until the division below
      s.slack_mean_us += static_cast<double>(r.slack);
      s.wu_lat_mean_us += static_cast<double>(r.wu_lat);
      s.run_max_us = first ? r.run : std::max(s.run_max_us, static_cast<double>(r.run));
      s.slack_min_us = first ? r.slack : std::min(s.slack_min_us, static_cast<double>(r.slack));
      s.wu_lat_max_us = first ? r.wu_lat : std::max(s.wu_lat_max_us, static_cast<double>(r.wu_lat));
    }
  }
  if (ec) return "cannot read the log directory '" + dir + "': " + ec.message();
  out->clear();
  for (auto& [task, s] : by_task) {
    if (s.loops) {
      const double n = static_cast<double>(s.loops);
      s.run_mean_us /= n;
      s.slack_mean_us /= n;
      s.wu_lat_mean_us /= n;
    }
    out->push_back(s);
  }
  return "";
}

std::string run_rt_app(const std::string& binary, const std::string& json_path, int64_t duration_s,
                       int64_t timeout_s, RtAppRun* out) {
  if (access(binary.c_str(), X_OK) != 0)
    return "--rt-app: " + binary + " not found (install Debian's rt-app: apt-get install rt-app)";
  bool ok = false;
  const std::string text = read_text(json_path, &ok);
  std::error_code fec;
  if (!ok || !std::filesystem::is_regular_file(json_path, fec)) return "--rt-app: cannot read '" + json_path + "'";
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(sim::relaxed_json_to_strict(text), nullptr, true, /*ignore_comments=*/true);
  } catch (const nlohmann::ordered_json::parse_error& e) {
    return "--rt-app: '" + json_path + "' is not valid JSON: " + e.what();
  }
  if (!j.is_object()) return "--rt-app: '" + json_path + "': expected an object";
  TempDir dir;
  std::string tmpl = (std::filesystem::temp_directory_path() / "schedlab-rt-app-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) return std::string("--rt-app: cannot create a temporary directory: ") + std::strerror(errno);
  dir.path = tmpl;
  const std::string basename = "rt-app";
  j["global"]["logdir"] = dir.path;
  j["global"]["log_basename"] = basename;
  if (duration_s > 0) j["global"]["duration"] = duration_s;
  if (timeout_s <= 0) {
    const nlohmann::ordered_json& d = j["global"]["duration"];
    timeout_s = d.is_number_integer() && d.get<int64_t>() > 0 ? d.get<int64_t>() + 10 : 60;
  }
  const std::string run_json = dir.path + "/run.json";
  std::ofstream(run_json) << j.dump(1, '\t') << "\n";
  const std::string output = dir.path + "/rt-app.out";

  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) return std::string("--rt-app: fork() failed: ") + std::strerror(errno);
  if (pid == 0) {
    const int fd = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    if (chdir(dir.path.c_str()) != 0) _exit(127);
    execl(binary.c_str(), binary.c_str(), run_json.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // rt-app 1.0 may not end by itself (a task that loops forever without a duration; with
  // "calibration": "CPU0" and no duration it does not get past its calibration): after the
  // limit it is interrupted (SIGINT, its clean shutdown), then killed.
  int status = 0;
  int signals_sent = 0;
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return std::string("--rt-app: waitpid() failed: ") + std::strerror(errno);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (signals_sent == 0 && t > static_cast<double>(timeout_s)) {
      kill(pid, SIGINT);
      signals_sent = 1;
    } else if (signals_sent == 1 && t > static_cast<double>(timeout_s) + 2) {
      kill(pid, SIGKILL);
      signals_sent = 2;
    }
    usleep(10000);
  }
  if (signals_sent)
    return "--rt-app: rt-app did not finish within " + std::to_string(timeout_s) +
           " s and was stopped (give the file a global.duration or --duration, or raise --timeout; "
           "rt-app 1.0 with \"calibration\": \"CPU0\" needs a duration)";
  out->elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string log = read_text(output, &ok);
    return "--rt-app: " + binary + " failed (" +
           (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                              : "signal " + std::to_string(WTERMSIG(status))) +
           "): " + tail_lines(log, 2);
  }
  return summarize_rt_app_logs(dir.path, basename, &out->tasks);
}

void print_rt_app_run(const RtAppRun& r, std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line, "rt-app on this host: %.2f s\n", r.elapsed_s);
  out << line;
  std::snprintf(line, sizeof line, "  %-16s %7s %8s %11s %10s %13s %12s %12s\n", "task", "threads", "loops",
                "run mean us", "run max us", "slack mean us", "wu_lat mean", "wu_lat max");
  out << line;
  for (const RtAppTaskSummary& t : r.tasks) {
    std::snprintf(line, sizeof line, "  %-16s %7d %8llu %11.1f %10.0f %13.1f %12.1f %12.0f\n", t.task.c_str(), t.threads,
                  static_cast<unsigned long long>(t.loops), t.run_mean_us, t.run_max_us, t.slack_mean_us,
                  t.wu_lat_mean_us, t.wu_lat_max_us);
    out << line;
  }
}

void set_rt_app_compare_hook(RtAppCompareHook hook) { g_rt_app_hook = hook; }
RtAppCompareHook rt_app_compare_hook() { return g_rt_app_hook; }

}  // namespace real
