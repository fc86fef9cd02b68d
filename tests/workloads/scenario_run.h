// Runs a scenario given as `key=value` assignments (what --set and scenario files take) and
// reads its metrics: the helpers the workload tests share.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/results.h"
#include "scenario/experiment.h"

namespace testing_support {

// Runs the scenario of `base` then `sets`; fails the test on any error or kernel warning.
inline report::Results run_assignments(const std::vector<std::string>& base, const std::vector<std::string>& sets) {
  scenario::Experiment e;
  for (const std::string& s : base) EXPECT_EQ(scenario::set_assignment(&e, s), "") << s;
  for (const std::string& s : sets) EXPECT_EQ(scenario::set_assignment(&e, s), "") << s;
  report::Results r;
  EXPECT_EQ(scenario::run(e, &r), "");
  EXPECT_EQ(r.warnings, 0u) << r.first_warning;
  return r;
}

// The first error of `base` (which must be accepted) then `sets`, or of the run; "" if none.
inline std::string run_assignments_error(const std::vector<std::string>& base, const std::vector<std::string>& sets) {
  scenario::Experiment e;
  for (const std::string& s : base) EXPECT_EQ(scenario::set_assignment(&e, s), "") << s;
  for (const std::string& s : sets)
    if (std::string err = scenario::set_assignment(&e, s); !err.empty()) return err;
  report::Results r;
  return scenario::run(e, &r);
}

// The value of metric `name` (the test fails if there is none).
inline double metric(const report::Results& r, const std::string& name) {
  const report::Metric* m = r.metric(name);
  EXPECT_NE(m, nullptr) << name;
  return m ? m->value : -1;
}

}  // namespace testing_support
