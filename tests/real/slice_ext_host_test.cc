// real/slice_ext.h against the running kernel: the rseq area it finds is the live one (its
// cpu_id follows the thread when pinned to each CPU in turn), and selection on this host never
// fails hard, whatever the kernel supports. The C header agrees with the C++ selection.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/rseq.h>

#include <cerrno>
#include <thread>
#include <vector>

#include "real/slice_ext.h"
#include "real/slice_ext_c.h"

namespace {

// Our offsets match the struct rseq the system headers describe.
static_assert(offsetof(struct rseq, cpu_id) == SCHEDLAB_RSEQ_CPU_ID_OFFSET);
static_assert(offsetof(struct rseq, flags) == SCHEDLAB_RSEQ_FLAGS_OFFSET);
static_assert(sizeof(schedlab_rseq_slice_ctrl) == 4);

uint32_t read_cpu_id(const void* area) {
  return *reinterpret_cast<const volatile uint32_t*>(static_cast<const char*>(area) +
                                                     SCHEDLAB_RSEQ_CPU_ID_OFFSET);
}

// Pins the calling thread to each allowed CPU in turn and compares the rseq cpu_id with
// sched_getcpu(); restores the affinity. Returns the number of CPUs checked.
int check_cpu_id_on_each_cpu(const void* area) {
  cpu_set_t saved;
  CPU_ZERO(&saved);
  EXPECT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  int checked = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &saved)) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    // The kernel migrates the thread before sched_setaffinity returns, and refreshes cpu_id
    // on that return to user space.
    if (sched_setaffinity(0, sizeof(one), &one) != 0) continue;
    EXPECT_EQ(sched_getcpu(), c);
    EXPECT_EQ(read_cpu_id(area), static_cast<uint32_t>(c)) << "pinned to CPU " << c;
    ++checked;
  }
  EXPECT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  return checked;
}

TEST(RseqArea, CpuIdFollowsTheThreadPinnedToEachCpu) {
  const void* area = real::thread_rseq_area();
  if (area == nullptr) GTEST_SKIP() << "this kernel has no rseq";
  EXPECT_GE(check_cpu_id_on_each_cpu(area), 1);
}

TEST(RseqArea, EveryThreadHasItsOwnArea) {
  const void* main_area = real::thread_rseq_area();
  if (main_area == nullptr) GTEST_SKIP() << "this kernel has no rseq";
  const void* other_area = nullptr;
  std::thread t([&] {
    other_area = real::thread_rseq_area();
    if (other_area != nullptr) check_cpu_id_on_each_cpu(other_area);
  });
  t.join();
  EXPECT_NE(other_area, nullptr);
  EXPECT_NE(other_area, main_area);
}

TEST(HostSelection, AutoSelectionNeverFailsHardAndExplainsItself) {
  const real::Selection sel = real::init_thread();
  EXPECT_NE(sel.backend, real::Backend::kRfc);  // never without an explicit request
  if (sel.backend == real::Backend::kNone) {
    EXPECT_NE(sel.reason(real::Backend::kMainline), "");
  }
  EXPECT_NE(sel.reason(real::Backend::kRfc), "");
  real::reset_thread_counters();
  { real::SliceGuard guard; }
  EXPECT_EQ(real::thread_counters().requests, 1u);
  real::TEST_reset_thread();
}

#if defined(__x86_64__)
TEST(HostSelection, ExplicitRfcOnAMainlineKernelIsNoneWithAReason) {
  // On mainline, 463 is unassigned (before 6.13, ENOSYS) or setxattrat (EINVAL for these
  // arguments); no released kernel has the RFC.
  const real::Selection sel = real::init_thread(real::Request::kRfc);
  if (sel.backend == real::Backend::kRfc) GTEST_SKIP() << "this kernel carries the RFC";
  EXPECT_EQ(sel.backend, real::Backend::kNone);
  EXPECT_NE(sel.reason(real::Backend::kRfc), "");
  real::TEST_reset_thread();
}
#endif

TEST(CHeader, EnablesExactlyWhenTheCppLibrarySelectsMainline) {
  const real::Selection sel = real::init_thread(real::Request::kMainline);
  const bool glibc_area = schedlab_libc_rseq_area() != nullptr;
  schedlab_rseq_slice_ctrl* ctrl = schedlab_slice_enable();
  if (sel.backend == real::Backend::kMainline && glibc_area) {
    ASSERT_NE(ctrl, nullptr);
    schedlab_slice_request(ctrl);
    EXPECT_EQ(ctrl->request, 1);
    schedlab_slice_release(ctrl);
    EXPECT_EQ(ctrl->request, 0);
  } else {
    EXPECT_EQ(ctrl, nullptr);
  }
  real::TEST_reset_thread();
}

}  // namespace
