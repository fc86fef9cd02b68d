// The hackbench workload: senders and receivers over a bounded pipe or socket model.
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "scenario/experiment.h"
#include "tests/workloads/scenario_run.h"

namespace {

report::Results run(std::initializer_list<std::string> sets) {
  return testing_support::run_assignments({"workload=hackbench", "machine=small4", "duration=1s"}, sets);
}

std::string run_error(std::initializer_list<std::string> sets) {
  return testing_support::run_assignments_error({"workload=hackbench", "machine=small4"}, sets);
}

using testing_support::metric;

std::set<int> hackbench_tgids(const report::Results& r) {
  std::set<int> tgids;
  for (const auto& t : r.tasks)
    if (t.comm == "hackbench") tgids.insert(t.tgid);
  return tgids;
}

// groups x fds senders each write loops messages to each of the fds receivers of its group.
TEST(WorkloadHackbench, EveryMessageIsWrittenAndTheRoundTimed) {
  const report::Results r = run({"groups=2", "fds=4", "loops=10"});
  EXPECT_EQ(metric(r, "hackbench_messages"), 2 * 4 * 4 * 10);
  EXPECT_EQ(metric(r, "hackbench_rounds"), 1);
  // 320 writes and 320 reads of 500 ns on 4 CPUs take at least 80 us.
  EXPECT_GE(metric(r, "hackbench_time_s"), 80e-6);
  EXPECT_LT(metric(r, "hackbench_time_s"), 0.1);
}

// A one-message buffer makes every writer wait for the reader, yet all messages arrive.
TEST(WorkloadHackbench, AFullBufferBlocksTheWritersUntilTheReaderEmptiesIt) {
  const report::Results roomy = run({"groups=1", "fds=4", "loops=50", "capacity=1000"});
  const report::Results tight = run({"groups=1", "fds=4", "loops=50", "capacity=1"});
  EXPECT_EQ(metric(tight, "hackbench_rounds"), 1);
  EXPECT_EQ(metric(tight, "hackbench_messages"), 4 * 4 * 50);
  uint64_t roomy_sw = 0, tight_sw = 0;
  for (const auto& t : roomy.tasks) roomy_sw += t.nvcsw;
  for (const auto& t : tight.tasks) tight_sw += t.nvcsw;
  EXPECT_GT(tight_sw, roomy_sw);
}

// hackbench's default: processes; -T: threads of one process (one mm, for mm_cid).
// The voluntary switches of one group's senders (hackbench forks a group's receivers, then
// its senders: the second half of its tasks by pid).
uint64_t sender_sleeps(const report::Results& r) {
  std::vector<std::pair<int, uint64_t>> by_pid;
  for (const auto& t : r.tasks)
    if (t.comm == "hackbench") by_pid.emplace_back(t.pid, t.nvcsw);
  std::sort(by_pid.begin(), by_pid.end());
  uint64_t n = 0;
  for (size_t i = by_pid.size() / 2; i < by_pid.size(); ++i) n += by_pid[i].second;
  return n;
}

// One sender, one slow reader, 8 messages of room. A unix stream socket's writer sleeps on a
// full buffer until unix_write_space() finds a quarter of it or less in use: it then writes
// 6 before the next sleep, about 67 sleeps for 400 messages. A pipe's is woken by the read
// that finds the pipe full and sleeps again after one write: one sleep per message.
TEST(WorkloadHackbench, ASocketsWriterWakesAtAQuarterFullAPipesAtEachReadFromFull) {
  const std::initializer_list<std::string> common = {
      "groups=1", "fds=1", "loops=400", "capacity=8", "read_cost=5us", "write_cost=100ns"};
  std::vector<std::string> socket(common), pipe(common);
  socket.push_back("transport=socket");
  pipe.push_back("transport=pipe");
  const report::Results rs = testing_support::run_assignments(
      {"workload=hackbench", "machine=small4", "duration=1s"}, socket);
  const report::Results rp = testing_support::run_assignments(
      {"workload=hackbench", "machine=small4", "duration=1s"}, pipe);
  ASSERT_EQ(metric(rs, "hackbench_rounds"), 1);
  ASSERT_EQ(metric(rp, "hackbench_rounds"), 1);
  EXPECT_GE(sender_sleeps(rs), 400u / 8);
  EXPECT_LE(sender_sleeps(rs), 400u / 6 + 5);
  EXPECT_GE(sender_sleeps(rp), 400u - 10);
}

// Pipe writers wait exclusively: a read from a full pipe wakes one of four writers, not all
// of them only for three to find it full again and sleep (about 0.6 sleeps per message).
TEST(WorkloadHackbench, APipeWakesOneWriterAtATime) {
  const report::Results r = run({"groups=1", "fds=4", "loops=100", "capacity=8",
                                 "read_cost=5us", "write_cost=100ns", "transport=pipe"});
  ASSERT_EQ(metric(r, "hackbench_rounds"), 1);
  EXPECT_LT(sender_sleeps(r), 4u * 4 * 100 / 2);
}

// On 50 CPUs two groups (80 tasks) finish sooner than four: no receiver's buffer turns into
// a herd of 20 writers woken at each read.
TEST(WorkloadHackbench, TwoGroupsOnFiftyCpusFinishSoonerThanFour) {
  const report::Results two = testing_support::run_assignments(
      {"workload=hackbench", "machine=vm50", "duration=100ms"}, {"groups=2"});
  const report::Results four = testing_support::run_assignments(
      {"workload=hackbench", "machine=vm50", "duration=100ms"}, {"groups=4"});
  ASSERT_EQ(metric(two, "hackbench_rounds"), 1);
  ASSERT_EQ(metric(four, "hackbench_rounds"), 1);
  EXPECT_LT(metric(two, "hackbench_time_s"), metric(four, "hackbench_time_s"));
}

TEST(WorkloadHackbench, KindChoosesProcessesOrThreadsOfOneProcess) {
  EXPECT_EQ(hackbench_tgids(run({"groups=2", "fds=3", "loops=1"})).size(), 12u);
  EXPECT_EQ(hackbench_tgids(run({"groups=2", "fds=3", "loops=1", "kind=thread"})).size(), 1u);
}

TEST(WorkloadHackbench, RoundsZeroRepeatsUntilTheRunEnds) {
  const report::Results r = run({"groups=1", "fds=4", "loops=10", "rounds=0", "duration=100ms"});
  EXPECT_GT(metric(r, "hackbench_rounds"), 10);
}

TEST(WorkloadHackbench, ARunTooShortForARoundSaysSo) {
  const report::Results r = run({"duration=1ms"});
  EXPECT_EQ(metric(r, "hackbench_time_s"), -1);
  EXPECT_EQ(metric(r, "hackbench_rounds"), 0);
  ASSERT_FALSE(r.notices.empty());
}

// Beside cyclictest: both report.
TEST(WorkloadHackbench, RunsBesideCyclictest) {
  scenario::Experiment e;
  for (const char* s : {"workload=cyclictest", "machine=small4", "duration=200ms"})
    ASSERT_EQ(scenario::set_assignment(&e, s), "") << s;
  ASSERT_EQ(scenario::add_also(&e, "hackbench:groups=2,rounds=0"), "");
  report::Results r;
  ASSERT_EQ(scenario::run(e, &r), "");
  EXPECT_GT(metric(r, "hackbench_rounds"), 0);
  EXPECT_GT(metric(r, "wakeup_max_us"), 0);
}

TEST(WorkloadHackbench, BadParametersAreNamed) {
  for (const char* bad : {"groups=0", "fds=0", "loops=0", "kind=fork", "transport=tcp",
                          "capacity=0", "write_cost=-1us", "read_cost=x", "rounds=-1",
                          "datasize=0"}) {
    const std::string err = run_error({bad});
    const std::string name = std::string(bad).substr(0, std::string(bad).find('='));
    EXPECT_EQ(err.rfind(name + ":", 0), 0u) << bad << " -> " << err;
  }
  EXPECT_EQ(run_error({"groups=3000"}).rfind("groups:", 0), 0u);
}

}  // namespace
