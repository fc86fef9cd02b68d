// A comparison's runs shared among the processes of an MPI job (Open MPI's mpirun, Slurm's
// srun): rank r of N runs the runs r, r + N, r + 2N, ... with the comparison's --jobs
// threads, sends their metric values to rank 0, and rank 0 assembles the comparison a run in
// one process gives (scenario/compare.h). MPI is optional at build time (-DSCHEDLAB_MPI);
// without it init() says so.
#pragma once
#include <functional>
#include <string>

#include "report/compare.h"
#include "scenario/compare.h"

namespace scenario {

// Whether this build has MPI.
bool mpi_built();

// The job size and this process's rank as an MPI or Slurm launcher gives them in the
// environment (OMPI_COMM_WORLD_SIZE / PMI_SIZE; OMPI_COMM_WORLD_RANK / PMI_RANK / PMIX_RANK /
// SLURM_PROCID), without starting MPI: 0 outside a launcher.
int launcher_size();
int launcher_rank();

// This process's part in an MPI job. Every method is collective: every rank calls it, in
// the same order. The destructor finalizes MPI, or, when an exception is unwinding (a rank
// failed where the others cannot learn of it), aborts the whole job so that none waits.
class MpiJob {
 public:
  MpiJob() = default;
  ~MpiJob();
  MpiJob(const MpiJob&) = delete;
  MpiJob& operator=(const MpiJob&) = delete;

  // Starts MPI (once per process). "" or the error.
  std::string init();
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Every rank's error (each "" or one), agreed: on rank 0 the error of the lowest rank that
  // has one, on the others a non-empty text when any rank has one; "" when none has.
  std::string agree(const std::string& error);
  // Rank 0's exit code, on every rank.
  int exit_code(int code);

 private:
  bool started_ = false;
  int rank_ = 0, size_ = 1;
};

// Runs this rank's share of the plan's runs; rank 0 receives every other rank's values and
// assembles the comparison. On rank 0: "" and *out filled, or the first failed run's error
// (any rank's). On the others: "" (their result goes to rank 0). `progress` gets this rank's
// runs done / runs in its share. spec.jobs 0 is the number of CPUs the rank may run on,
// divided among the ranks of its node that may run on the same CPUs.
std::string compare_mpi(MpiJob* job, const CompareSpec& spec, const ComparePlan& plan,
                        report::Comparison* out, const std::function<void(int, int)>& progress = {});

}  // namespace scenario
