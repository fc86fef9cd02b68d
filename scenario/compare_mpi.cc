// The MPI side of a comparison (scenario/compare_mpi.h). Built with MPI when
// SCHEDLAB_HAVE_MPI is defined (-DSCHEDLAB_MPI=AUTO finding it, or ON).
#include "scenario/compare_mpi.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <thread>
#include <vector>

#ifdef SCHEDLAB_HAVE_MPI
#include <mpi.h>
#endif

namespace scenario {

namespace {
// The first of these environment variables that holds an integer >= 0; -1 if none does.
int env_int(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* v = std::getenv(name);
    char* end = nullptr;
    if (!v || !*v) continue;
    const long n = std::strtol(v, &end, 10);
    if (*end == '\0' && n >= 0 && n <= 1 << 30) return static_cast<int>(n);
  }
  return -1;
}
}  // namespace

int launcher_size() { return std::max(0, env_int({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})); }
int launcher_rank() {
  return std::max(0, env_int({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}));
}

#ifdef SCHEDLAB_HAVE_MPI

bool mpi_built() { return true; }

namespace {
// Waits for a request, sleeping between tests: a rank done with its share does not spin on
// a CPU that the others' runs need (its ranks may share the node's cores).
void wait_for(MPI_Request* req) {
  for (int done = 0;;) {
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

constexpr int kTagLength = 1, kTagBytes = 2;
// A message is sent in pieces of at most this many bytes (MPI counts are int).
constexpr uint64_t kPiece = uint64_t{1} << 30;

void send_bytes(const std::string& b, int to) {
  uint64_t n = b.size();
  MPI_Request req;
  MPI_Isend(&n, 1, MPI_UINT64_T, to, kTagLength, MPI_COMM_WORLD, &req);
  wait_for(&req);
  for (uint64_t at = 0; at < n; at += kPiece) {
    MPI_Isend(b.data() + at, static_cast<int>(std::min(kPiece, n - at)), MPI_CHAR, to, kTagBytes,
              MPI_COMM_WORLD, &req);
    wait_for(&req);
  }
}

std::string recv_bytes(int from) {
  uint64_t n = 0;
  MPI_Request req;
  MPI_Irecv(&n, 1, MPI_UINT64_T, from, kTagLength, MPI_COMM_WORLD, &req);
  wait_for(&req);
  std::string b(n, '\0');
  for (uint64_t at = 0; at < n; at += kPiece) {
    MPI_Irecv(b.data() + at, static_cast<int>(std::min(kPiece, n - at)), MPI_CHAR, from, kTagBytes,
              MPI_COMM_WORLD, &req);
    wait_for(&req);
  }
  return b;
}
}  // namespace

MpiJob::~MpiJob() {
  if (!started_) return;
  if (std::uncaught_exceptions() > 0) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Finalize();
}

std::string MpiJob::init() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return "--mpi: MPI was already started in this process";
  // Only the thread that started MPI calls it; the runs' threads do not.
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    return "--mpi: MPI_Init_thread failed";
  started_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  return "";
}

std::string MpiJob::agree(const std::string& error) {
  int first = error.empty() ? size_ : rank_;
  MPI_Request req;
  MPI_Iallreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req);
  wait_for(&req);
  if (first == size_) return "";
  if (first == 0) return rank_ == 0 ? error : "rank 0 failed";
  if (rank_ == first) send_bytes(error, 0);
  if (rank_ == 0) return recv_bytes(first);
  return "rank " + std::to_string(first) + " failed";
}

int MpiJob::exit_code(int code) {
  MPI_Request req;
  MPI_Ibcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
  wait_for(&req);
  return code;
}

// --jobs 0 in a rank: its part of the CPUs it may run on, shared with the ranks of its node
// that may run on the same ones. Launchers bind ranks to CPUs (Open MPI: each of 2 ranks to
// a core, more to a socket; Slurm: --cpus-per-task) or not (--bind-to none): the threads
// then fill the node without running two to a CPU.
int default_jobs() {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0)
    for (unsigned c = 0; c < std::thread::hardware_concurrency() && c < CPU_SETSIZE; ++c) CPU_SET(c, &mine);
  MPI_Comm node;
  int beside = 1;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &beside);
  std::vector<cpu_set_t> all(static_cast<size_t>(beside));
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, node);
  MPI_Comm_free(&node);
  int same = 0;
  for (const cpu_set_t& other : all) same += CPU_EQUAL(&other, &mine) ? 1 : 0;
  return std::max(1, CPU_COUNT(&mine) / std::max(1, same));
}

std::string compare_mpi(MpiJob* job, const CompareSpec& given, const ComparePlan& plan,
                        report::Comparison* out, const std::function<void(int, int)>& progress) {
  const size_t rank = static_cast<size_t>(job->rank()), size = static_cast<size_t>(job->size());
  CompareSpec spec = given;
  if (spec.jobs == 0) spec.jobs = std::min(default_jobs(), kMaxJobs);
  std::vector<RunShare> shares(rank == 0 ? size : 1);
  run_share(spec, plan, rank, size, &shares[0], progress);
  if (rank != 0) {
    send_bytes(encode_share(shares[0]), 0);
    return "";
  }
  std::string error;
  for (size_t r = 1; r < size; ++r) {
    // Every rank's share is received even after a bad one, so that no rank waits forever.
    const std::string err = decode_share(recv_bytes(static_cast<int>(r)), &shares[r]);
    if (error.empty() && !err.empty()) error = "rank " + std::to_string(r) + ": " + err;
  }
  if (!error.empty()) return error;
  return assemble_comparison(spec, plan, &shares, out);
}

#else  // no MPI in this build

bool mpi_built() { return false; }

MpiJob::~MpiJob() = default;

std::string MpiJob::init() {
  return "--mpi: this schedlab was built without MPI (install libopenmpi-dev and configure "
         "with -DSCHEDLAB_MPI=ON)";
}

std::string MpiJob::agree(const std::string& error) { return error; }

int MpiJob::exit_code(int code) { return code; }

std::string compare_mpi(MpiJob*, const CompareSpec& spec, const ComparePlan& plan,
                        report::Comparison* out, const std::function<void(int, int)>& progress) {
  std::vector<RunShare> shares(1);
  run_share(spec, plan, 0, 1, &shares[0], progress);
  return assemble_comparison(spec, plan, &shares, out);
}

#endif

}  // namespace scenario
