// The udp-flood workload: the latency_sensi_flag patch's experiment (a UDP flood's NET_RX on
// one CPU, a sendto() loop there), its metrics and its parameter errors.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "tests/workloads/scenario_run.h"

namespace {

const std::vector<std::string> kBase = {"workload=udp-flood", "machine=small4", "duration=100ms",
                                        "softirq.ksoftirqd=true", "softirq.latency_sensi_flag=true"};

report::Results run(std::initializer_list<std::string> sets) { return testing_support::run_assignments(kBase, sets); }

std::string run_error(std::initializer_list<std::string> sets) {
  return testing_support::run_assignments_error({"workload=udp-flood", "machine=small4", "duration=10ms",
                                                 "softirq.ksoftirqd=true"},
                                                sets);
}

using testing_support::metric;

}  // namespace

// Without the flag the sender runs NET_RX inside its own local_bh_enable(); with it that
// share drops to zero and the work runs in ksoftirqd instead, as the patch's perf showed.
TEST(WorkloadUdpFlood, TheFlagMovesTheSendersBhSoftirqWorkToKsoftirqd) {
  const report::Results off = run({});
  const report::Results on = run({"sender_flag=true"});
  EXPECT_GT(metric(off, "sender_bh_softirq_share"), 0.05);
  EXPECT_GT(metric(off, "net_rx_seconds_bh_enable"), metric(off, "net_rx_seconds_ksoftirqd"));
  EXPECT_EQ(metric(on, "sender_bh_softirq_share"), 0);
  EXPECT_EQ(metric(on, "net_rx_seconds_bh_enable"), 0);
  EXPECT_GT(metric(on, "net_rx_seconds_ksoftirqd"), metric(off, "net_rx_seconds_ksoftirqd"));
  // ksoftirqd, a nice-0 fair thread on the sender's CPU, now takes CPU time of its own.
  EXPECT_GT(metric(on, "ksoftirqd_cpu_seconds"), metric(on, "net_rx_seconds_ksoftirqd"));
  EXPECT_LT(metric(on, "sender_cpu_seconds"), metric(off, "sender_cpu_seconds"));
  // Every packet that arrived was received or dropped; 300 kpps for 100 ms.
  const double got = metric(off, "packets_received_per_second") + metric(off, "packets_dropped_per_second");
  EXPECT_NEAR(got, 300000, 15000);
}

// Threaded NAPI: no NET_RX softirq at all; the napi kthread does the work.
TEST(WorkloadUdpFlood, ThreadedNapiMovesTheWorkToTheNapiThread) {
  const report::Results r = run({"softirq.napi_threaded=true"});
  EXPECT_EQ(metric(r, "net_rx_seconds_bh_enable"), 0);
  EXPECT_EQ(metric(r, "net_rx_seconds_ksoftirqd"), 0);
  EXPECT_GT(metric(r, "net_rx_seconds_napi_thread"), 0.01);
}

TEST(WorkloadUdpFlood, BadParametersAreOneLineErrorsNamingThem) {
  EXPECT_NE(run_error({"flows=rate:1000/colour:3"}).find("unknown flow parameter 'colour'"), std::string::npos);
  EXPECT_NE(run_error({"rate=-5"}).find("rate:"), std::string::npos);
  EXPECT_NE(run_error({"ring=0"}).find("ring:"), std::string::npos);
  EXPECT_NE(run_error({"sender_flag=true"}).find("sender_flag: latency_sensitive"), std::string::npos);
  EXPECT_NE(run_error({"softirq.ksoftirqd=false"}).find("softirq.ksoftirqd"), std::string::npos);
}
