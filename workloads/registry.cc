// The list of built-in workloads.
#include "workloads/workload.h"

namespace workloads {

WorkloadInfo cyclictest_workload();
WorkloadInfo extend_sched2_workload();
WorkloadInfo hackbench_workload();
WorkloadInfo hog_workload();
WorkloadInfo locktable_workload();
WorkloadInfo mm_cid_compaction_test_workload();
WorkloadInfo oltp_workload();
WorkloadInfo rt_app_workload();
WorkloadInfo spinlock_workload();
WorkloadInfo udp_flood_workload();
WorkloadInfo wakeup_latency_workload();

const std::vector<WorkloadInfo>& registry() {
  static const std::vector<WorkloadInfo> all = {
      cyclictest_workload(),
      extend_sched2_workload(),
      hackbench_workload(),
      hog_workload(),
      locktable_workload(),
      mm_cid_compaction_test_workload(),
      oltp_workload(),
      rt_app_workload(),
      spinlock_workload(),
      udp_flood_workload(),
      wakeup_latency_workload()};
  return all;
}

const WorkloadInfo* find_workload(const std::string& name) {
  for (const WorkloadInfo& w : registry())
    if (w.name == name) return &w;
  return nullptr;
}

}  // namespace workloads
