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

const report::LatencySummary& latency(const report::Results& r, const std::string& name) {
  for (const report::LatencySummary& l : r.latencies)
    if (l.name == name) return l;
  static const report::LatencySummary none;
  ADD_FAILURE() << "no latency " << name;
  return none;
}

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

// The server's thread on another CPU keeps up with 300 kpps: every datagram NET_RX delivers
// reaches the application, the socket drops nothing, and the receive latency (NIC to
// recvmsg()'s return) is tens of microseconds. Sharing the flooded CPU with the sender, it
// gets half of it: the socket queue fills, overflows (RcvbufErrors), and the datagrams that
// get through have waited milliseconds on it.
TEST(WorkloadUdpFlood, AServerThreadReceivesTheFloodAndSharingTheCpuOverflowsItsSocket) {
  const report::Results other = run({"server=other"});
  const report::Results same = run({"server=same"});
  const double arrived = metric(other, "packets_received_per_second");
  EXPECT_NEAR(metric(other, "server_datagrams_per_second"), arrived, 0.01 * arrived);
  EXPECT_EQ(metric(other, "socket_drops_per_second"), 0);
  EXPECT_GT(metric(other, "server_cpu_seconds"), 0.02);
  EXPECT_LT(latency(other, "app_receive").p99_ns, 100000);
  // A datagram is on the socket only once its NET_RX work has ended.
  EXPECT_GE(latency(other, "app_receive").min_ns, latency(other, "packet_receive").min_ns);
  EXPECT_GT(metric(same, "socket_drop_share"), 0.1);
  EXPECT_LT(metric(same, "server_datagrams_per_second"), 0.9 * arrived);
  EXPECT_GT(latency(same, "app_receive").p99_ns, 1000000);
  EXPECT_EQ(metric(same, "socket_queue_max"), 278);  // 212992 / 768 + 1
  // Without a server the flows end at the socket enqueue: no server metrics.
  const report::Results none = run({});
  for (const report::Metric& m : none.metrics) EXPECT_EQ(m.name.find("server_"), std::string::npos) << m.name;
}

// The reviewer's alternative: the test program hands its messages to a sending thread on the
// same CPU. The test program leaves no BH section (no softirq work inside its own
// local_bh_enable()); the sending thread's local_bh_enable() runs NET_RX instead. On another
// CPU the sending thread meets no NET_RX at all.
TEST(WorkloadUdpFlood, ASendingThreadTakesTheSendsAndTheNetRxTheyMeet) {
  const report::Results same = run({"send_via=same", "think=2us"});
  EXPECT_EQ(metric(same, "sender_bh_softirq_share"), 0);
  EXPECT_GT(metric(same, "sendthread_bh_softirq_share"), 0.05);
  EXPECT_NEAR(metric(same, "sender_messages_per_second"), metric(same, "sendthread_sendto_per_second"),
              0.01 * metric(same, "sender_messages_per_second"));
  const report::Results other = run({"send_via=other", "think=2us"});
  EXPECT_EQ(metric(other, "sendthread_bh_softirq_share"), 0);
  EXPECT_EQ(metric(other, "net_rx_seconds_bh_enable"), 0);
  EXPECT_GT(metric(other, "sender_messages_per_second"), metric(same, "sender_messages_per_second"));
}

TEST(WorkloadUdpFlood, BadParametersAreOneLineErrorsNamingThem) {
  EXPECT_NE(run_error({"server=maybe"}).find("server: must be none, same, other or any (got 'maybe')"),
            std::string::npos);
  EXPECT_NE(run_error({"send_via=pigeon"}).find("send_via: must be self, same or other (got 'pigeon')"),
            std::string::npos);
  EXPECT_NE(run_error({"server=same", "server_rcvbuf=0"}).find("server_rcvbuf"), std::string::npos);
  EXPECT_NE(run_error({"server_threads=2"}).find("server_threads: needs a server"), std::string::npos);
  EXPECT_NE(run_error({"server=same", "server_threads=0"}).find("server_threads"), std::string::npos);
  EXPECT_NE(run_error({"server=same", "server_work=-1us"}).find("server_work"), std::string::npos);
  EXPECT_NE(run_error({"flows=rate:1000/colour:3"}).find("unknown flow parameter 'colour'"), std::string::npos);
  EXPECT_NE(run_error({"rate=-5"}).find("rate:"), std::string::npos);
  EXPECT_NE(run_error({"ring=0"}).find("ring:"), std::string::npos);
  EXPECT_NE(run_error({"sender_flag=true"}).find("sender_flag: latency_sensitive"), std::string::npos);
  EXPECT_NE(run_error({"softirq.ksoftirqd=false"}).find("softirq.ksoftirqd"), std::string::npos);
}
