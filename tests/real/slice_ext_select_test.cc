// Backend selection of real/slice_ext.h against a faked kernel: each kernel answer (prctl
// supported or not, rseq registered by glibc or not, the RFC syscall) leads to the expected
// backend and reason, the RFC syscall is made only when asked for, and the protocol writes
// the word the selection found.
#include <gtest/gtest.h>
#include <stddef.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "real/slice_ext.h"

namespace {

// What the fake kernel answers, and what it was asked.
struct FakeKernel {
  long prctl_get = -EINVAL;  // answer to PR_RSEQ_SLICE_EXTENSION GET (7.0: 0 or 1)
  long prctl_set = 0;        // answer to SET
  bool libc_registered = true;
  bool advertise = true;     // registration writes RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE
  long rseq_answer = 0;      // answer to rseq(2) registration
  long getshared_answer = -ENOSYS;
  int prctl_gets = 0;
  int prctl_sets = 0;
  std::vector<long> syscalls;  // numbers, in call order
  std::vector<long> rseq_lens;
  alignas(64) unsigned char libc_area[64] = {};
  alignas(8) unsigned short shared_word = 0;  // the RFC's sched_delay

  bool called(long nr) const {
    return std::find(syscalls.begin(), syscalls.end(), nr) != syscalls.end();
  }
};

FakeKernel* g_kernel = nullptr;

long fake_prctl(int option, unsigned long arg2, unsigned long arg3) {
  if (option != SCHEDLAB_PR_RSEQ_SLICE_EXTENSION) return -EINVAL;
  if (arg2 == SCHEDLAB_PR_RSEQ_SLICE_EXTENSION_GET) {
    ++g_kernel->prctl_gets;
    return g_kernel->prctl_get;
  }
  ++g_kernel->prctl_sets;
  EXPECT_EQ(arg3, static_cast<unsigned long>(SCHEDLAB_PR_RSEQ_SLICE_EXT_ENABLE));
  return g_kernel->prctl_set;
}

long fake_syscall(long nr, long a1, long a2, long a3, long /*a4*/) {
  g_kernel->syscalls.push_back(nr);
  if (nr == SCHEDLAB_NR_rseq) {
    if (a3 & SCHEDLAB_RSEQ_FLAG_UNREGISTER) return 0;
    g_kernel->rseq_lens.push_back(a2);
    if (g_kernel->rseq_answer == 0 && g_kernel->advertise) {
      uint32_t flags = SCHEDLAB_RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE;
      std::memcpy(reinterpret_cast<char*>(a1) + SCHEDLAB_RSEQ_FLAGS_OFFSET, &flags, 4);
    }
    return g_kernel->rseq_answer;
  }
  if (nr == SCHEDLAB_NR_task_getshared) {
    if (g_kernel->getshared_answer == 0) {
      const uint64_t addr = reinterpret_cast<uintptr_t>(&g_kernel->shared_word);
      std::memcpy(reinterpret_cast<void*>(a3), &addr, sizeof(addr));
    }
    return g_kernel->getshared_answer;
  }
  if (nr == SCHEDLAB_NR_rseq_slice_yield) {
    g_kernel->libc_area[SCHEDLAB_RSEQ_SLICE_CTRL_OFFSET + 1] = 0;  // the grant ends
    return 1;
  }
  if (nr == SYS_sched_yield) return 0;
  return -ENOSYS;
}

void* fake_libc_area() { return g_kernel->libc_registered ? g_kernel->libc_area : nullptr; }

unsigned long fake_getauxval(unsigned long type) {
  if (type == SCHEDLAB_AT_RSEQ_FEATURE_SIZE) return 33;  // 7.0
  if (type == SCHEDLAB_AT_RSEQ_ALIGN) return 64;
  return 0;
}

constexpr real::KernelOps kFakeOps = {fake_prctl, fake_syscall, fake_libc_area, fake_getauxval};

class SliceSelectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_kernel = &kernel_;
    const uint32_t flags = SCHEDLAB_RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE;
    std::memcpy(kernel_.libc_area + SCHEDLAB_RSEQ_FLAGS_OFFSET, &flags, 4);
  }
  void TearDown() override { real::TEST_reset_thread(); }  // may unregister through the fake

  real::Selection select(real::Request r = real::Request::kAuto) {
    return real::init_thread(r, kFakeOps);
  }
  volatile unsigned char& request_byte() {
    return kernel_.libc_area[SCHEDLAB_RSEQ_SLICE_CTRL_OFFSET];
  }
  volatile unsigned char& granted_byte() {
    return kernel_.libc_area[SCHEDLAB_RSEQ_SLICE_CTRL_OFFSET + 1];
  }

  FakeKernel kernel_;
};

TEST_F(SliceSelectTest, AutoPicksMainlineWhenPrctlAndGlibcRseqWork) {
  kernel_.prctl_get = 0;
  const real::Selection sel = select();
  EXPECT_EQ(sel.backend, real::Backend::kMainline);
  EXPECT_EQ(kernel_.prctl_sets, 1);
  EXPECT_EQ(sel.reason(real::Backend::kMainline), "");
  EXPECT_NE(sel.reason(real::Backend::kRfc).find("not probed"), std::string::npos);
  EXPECT_FALSE(kernel_.called(SCHEDLAB_NR_task_getshared));
  EXPECT_FALSE(kernel_.called(SCHEDLAB_NR_rseq));  // glibc's area is used as is
  {
    real::SliceGuard guard;
    EXPECT_EQ(request_byte(), 1);
  }
  EXPECT_EQ(request_byte(), 0);
  EXPECT_FALSE(kernel_.called(SCHEDLAB_NR_rseq_slice_yield));  // nothing granted
  EXPECT_EQ(real::thread_counters().requests, 1u);
}

TEST_F(SliceSelectTest, AutoIsNoneWhenTheKernelDoesNotKnowThePrctl) {
  kernel_.prctl_get = -EINVAL;  // any kernel before 7.0
  const real::Selection sel = select();
  EXPECT_EQ(sel.backend, real::Backend::kNone);
  EXPECT_NE(sel.reason(real::Backend::kMainline).find("EINVAL"), std::string::npos);
  EXPECT_EQ(kernel_.prctl_sets, 0);
  EXPECT_FALSE(kernel_.called(SCHEDLAB_NR_task_getshared));
  EXPECT_EQ(sel.rejected.size(), 2u);  // a reason for each backend not used
}

TEST_F(SliceSelectTest, AutoIsNoneWhenPrctlIsENOSYS) {
  kernel_.prctl_get = -ENOSYS;
  const real::Selection sel = select();
  EXPECT_EQ(sel.backend, real::Backend::kNone);
  EXPECT_NE(sel.reason(real::Backend::kMainline).find("ENOSYS"), std::string::npos);
  EXPECT_FALSE(kernel_.called(SCHEDLAB_NR_task_getshared));
}

TEST_F(SliceSelectTest, AutoIsNoneWhenTheFeatureIsCompiledOut) {
  kernel_.prctl_get = -SCHEDLAB_ENOTSUPP;
  const real::Selection sel = select();
  EXPECT_EQ(sel.backend, real::Backend::kNone);
  EXPECT_NE(sel.reason(real::Backend::kMainline).find("CONFIG_RSEQ_SLICE_EXTENSION"),
            std::string::npos);
}

TEST_F(SliceSelectTest, AlreadyEnabledThreadIsNotEnabledAgain) {
  kernel_.prctl_get = 1;  // e.g. registered with RSEQ_FLAG_SLICE_EXT_DEFAULT_ON
  EXPECT_EQ(select().backend, real::Backend::kMainline);
  EXPECT_EQ(kernel_.prctl_sets, 0);
}

TEST_F(SliceSelectTest, NeverCallsSetWhenTheAreaDoesNotAdvertiseTheFeature) {
  // prctl SET would answer inconsistent flags with SIGSEGV.
  kernel_.prctl_get = 0;
  std::memset(kernel_.libc_area + SCHEDLAB_RSEQ_FLAGS_OFFSET, 0, 4);
  const real::Selection sel = select();
  EXPECT_EQ(sel.backend, real::Backend::kNone);
  EXPECT_EQ(kernel_.prctl_sets, 0);
  EXPECT_NE(sel.reason(real::Backend::kMainline).find("AVAILABLE"), std::string::npos);
  // On 7.0.10+ that is what glibc's 32-byte (legacy) registration gets: the reason says how
  // to get a v2 registration instead.
  EXPECT_NE(sel.reason(real::Backend::kMainline).find("GLIBC_TUNABLES=glibc.pthread.rseq=0"),
            std::string::npos);
}

TEST_F(SliceSelectTest, RefusedSetIsNoneWithTheReason) {
  kernel_.prctl_get = 0;
  kernel_.prctl_set = -SCHEDLAB_ENOTSUPP;  // disabled at boot or legacy registration
  const real::Selection sel = select();
  EXPECT_EQ(sel.backend, real::Backend::kNone);
  EXPECT_NE(sel.reason(real::Backend::kMainline).find("ENOTSUPP"), std::string::npos);
  real::SliceGuard guard;  // None: touches nothing
  EXPECT_EQ(request_byte(), 0);
}

TEST_F(SliceSelectTest, RegistersItsOwnRseqAreaWhenGlibcDidNot) {
  kernel_.prctl_get = 0;
  kernel_.libc_registered = false;
  EXPECT_EQ(select().backend, real::Backend::kMainline);
  ASSERT_EQ(kernel_.rseq_lens.size(), 1u);
  EXPECT_EQ(kernel_.rseq_lens[0], 33);  // AT_RSEQ_FEATURE_SIZE: a full 7.0 registration
  char* own = static_cast<char*>(real::thread_rseq_area(kFakeOps));
  ASSERT_NE(own, nullptr);
  EXPECT_NE(static_cast<void*>(own), static_cast<void*>(kernel_.libc_area));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(own) % 64, 0u);
  {
    real::SliceGuard guard;
    EXPECT_EQ(own[SCHEDLAB_RSEQ_SLICE_CTRL_OFFSET], 1);
  }
  EXPECT_EQ(own[SCHEDLAB_RSEQ_SLICE_CTRL_OFFSET], 0);
  real::TEST_reset_thread();  // unregisters
  EXPECT_EQ(std::count(kernel_.syscalls.begin(), kernel_.syscalls.end(), SCHEDLAB_NR_rseq), 2);
}

TEST_F(SliceSelectTest, NoneWhenNeitherGlibcNorTheLibraryCanRegisterRseq) {
  kernel_.prctl_get = 0;
  kernel_.libc_registered = false;
  kernel_.rseq_answer = -ENOSYS;
  const real::Selection sel = select();
  EXPECT_EQ(sel.backend, real::Backend::kNone);
  EXPECT_NE(sel.reason(real::Backend::kMainline).find("rseq"), std::string::npos);
  EXPECT_EQ(kernel_.prctl_sets, 0);
}

TEST_F(SliceSelectTest, MainlineGrantIsAnsweredWithRseqSliceYield) {
  kernel_.prctl_get = 0;
  ASSERT_EQ(select().backend, real::Backend::kMainline);
  real::slice_request();
  // The kernel grants at an interrupt return: request <- 0, granted <- 1.
  request_byte() = 0;
  granted_byte() = 1;
  EXPECT_TRUE(real::slice_release());
  EXPECT_TRUE(kernel_.called(SCHEDLAB_NR_rseq_slice_yield));
  EXPECT_EQ(granted_byte(), 0);
  const real::Counters c = real::thread_counters();
  EXPECT_EQ(c.requests, 1u);
  EXPECT_EQ(c.grants, 1u);
  EXPECT_EQ(c.yields, 1u);
}

TEST_F(SliceSelectTest, RfcIsUsedOnlyWhenRequestedExplicitly) {
  kernel_.getshared_answer = 0;
  kernel_.prctl_get = 0;
  for (real::Request r : {real::Request::kAuto, real::Request::kMainline, real::Request::kNone})
    EXPECT_NE(select(r).backend, real::Backend::kRfc);
  EXPECT_FALSE(kernel_.called(SCHEDLAB_NR_task_getshared));

  const int gets_before = kernel_.prctl_gets;
  const real::Selection sel = select(real::Request::kRfc);
  EXPECT_EQ(sel.backend, real::Backend::kRfc);
  EXPECT_TRUE(kernel_.called(SCHEDLAB_NR_task_getshared));
  EXPECT_EQ(kernel_.prctl_gets, gets_before);  // mainline not probed when the RFC is asked for
  EXPECT_EQ(sel.reason(real::Backend::kMainline), "not requested");
}

TEST_F(SliceSelectTest, RfcProtocolWritesReqAndAnswersGrantedAndDenied) {
  kernel_.getshared_answer = 0;
  ASSERT_EQ(select(real::Request::kRfc).backend, real::Backend::kRfc);
  {
    real::SliceGuard guard;
    EXPECT_EQ(kernel_.shared_word, SCHEDLAB_TASK_PREEMPT_DELAY_REQ);
    kernel_.shared_word = SCHEDLAB_TASK_PREEMPT_DELAY_GRANTED;
  }
  EXPECT_EQ(kernel_.shared_word, 0);
  EXPECT_TRUE(kernel_.called(SYS_sched_yield));
  real::slice_request();
  kernel_.shared_word = SCHEDLAB_TASK_PREEMPT_DELAY_DENIED;
  EXPECT_FALSE(real::slice_release());
  const real::Counters c = real::thread_counters();
  EXPECT_EQ(c.requests, 2u);
  EXPECT_EQ(c.grants, 1u);
  EXPECT_EQ(c.yields, 1u);
  EXPECT_EQ(c.denials, 1u);
}

TEST_F(SliceSelectTest, RfcRequestedOnAKernelWithoutItIsNone) {
  kernel_.getshared_answer = -ENOSYS;
  real::Selection sel = select(real::Request::kRfc);
  EXPECT_EQ(sel.backend, real::Backend::kNone);
  EXPECT_NE(sel.reason(real::Backend::kRfc).find("ENOSYS"), std::string::npos);
  kernel_.getshared_answer = -EINVAL;  // mainline 6.13+: setxattrat
  sel = select(real::Request::kRfc);
  EXPECT_EQ(sel.backend, real::Backend::kNone);
  EXPECT_NE(sel.reason(real::Backend::kRfc).find("EINVAL"), std::string::npos);
}

TEST_F(SliceSelectTest, RequestNoneAsksTheKernelNothing) {
  kernel_.prctl_get = 0;
  EXPECT_EQ(select(real::Request::kNone).backend, real::Backend::kNone);
  EXPECT_EQ(kernel_.prctl_gets, 0);
  EXPECT_TRUE(kernel_.syscalls.empty());
}

TEST_F(SliceSelectTest, ReselectingAfterAFailureLeavesNone) {
  kernel_.prctl_get = 0;
  ASSERT_EQ(select().backend, real::Backend::kMainline);
  kernel_.prctl_get = -EINVAL;
  EXPECT_EQ(select().backend, real::Backend::kNone);
  EXPECT_EQ(real::thread_backend(), real::Backend::kNone);
  real::SliceGuard guard;
  EXPECT_EQ(request_byte(), 0);
}

}  // namespace
