// `schedlab real ... --compare-sim`: runs the simulator on the `host` machine profile with
// the parameters of a real run and prints both side by side with the relative difference.
#pragma once
#include "real/runner.h"

namespace cli {

int compare_real_with_sim(const real::Params& p, const real::RunResult& measured);

}  // namespace cli
