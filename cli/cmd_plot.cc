// `schedlab plot INPUT.json -o OUT.svg|png`: draws a run's or a comparison's JSON with gnuplot
// (report/plot.h writes the script). gnuplot is found on PATH, or named by SCHEDLAB_GNUPLOT.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli/cli.h"
#include "report/output_file.h"
#include "report/plot.h"

extern char** environ;

namespace cli {

namespace {

std::string find_gnuplot() {
  if (const char* g = std::getenv("SCHEDLAB_GNUPLOT")) return access(g, X_OK) == 0 ? g : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    const std::string p = (colon > start ? dirs.substr(start, colon - start) : ".") + "/gnuplot";
    if (access(p.c_str(), X_OK) == 0) return p;
    start = colon + 1;
  }
  return "";
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A temporary file (removed by the destructor).
struct TempFile {
  std::string path;
  int fd = -1;
  TempFile() {
    const char* dir = std::getenv("TMPDIR");
    std::string tmpl = std::string(dir && *dir ? dir : "/tmp") + "/schedlab-plot-XXXXXX";
    fd = mkstemp(tmpl.data());
    if (fd >= 0) path = tmpl;
  }
  ~TempFile() {
    if (fd >= 0) close(fd);
    if (!path.empty()) unlink(path.c_str());
  }
};

}  // namespace

int do_plot(const std::string& input, const std::string& output) {
  if (output.empty()) return fail("plot: give the output file with -o OUT.svg or -o OUT.png");
  report::PlotFormat format;
  if (ends_with(output, ".svg")) {
    format = report::PlotFormat::kSvg;
  } else if (ends_with(output, ".png")) {
    format = report::PlotFormat::kPng;
  } else {
    return fail("-o: the file name must end in .svg or .png (got '" + output + "')");
  }
  std::ifstream in(input);
  if (!in) return fail("plot: cannot read '" + input + "'");
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return fail("plot: '" + input + "' is not JSON");
  std::string script;
  if (std::string err = report::plot_script(doc, format, &script); !err.empty())
    return fail("plot: '" + input + "': " + err);
  const std::string gnuplot = find_gnuplot();
  if (gnuplot.empty())
    return fail("plot: gnuplot not found (install the Debian package gnuplot-nox)");
  // The destination is checked (its temporary created) before gnuplot runs.
  report::OutputFile out;
  std::string werr;
  if (!out.open(output, &werr)) return fail(werr);

  TempFile script_file, image;
  if (script_file.fd < 0 || image.fd < 0) return fail("plot: cannot create a temporary file");
  if (write(script_file.fd, script.data(), script.size()) != static_cast<ssize_t>(script.size()))
    return fail("plot: cannot write a temporary file");
  // gnuplot reads the script on stdin and writes the image on stdout.
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, script_file.path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, image.path.c_str(), O_WRONLY | O_TRUNC, 0);
  char* argv[] = {const_cast<char*>(gnuplot.c_str()), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, gnuplot.c_str(), &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return fail("plot: cannot run " + gnuplot);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "schedlab: internal error: %s failed on the plot script\n", gnuplot.c_str());
    return 1;
  }
  std::ifstream img(image.path, std::ios::binary);
  std::stringstream bytes;
  bytes << img.rdbuf();
  if (bytes.str().empty()) {
    std::fprintf(stderr, "schedlab: internal error: %s wrote no image\n", gnuplot.c_str());
    return 1;
  }
  if (!out.commit(bytes.str(), &werr)) return fail(werr);
  return 0;
}

}  // namespace cli
