// User-side slice extension protocols.
#include "user/slice_ext.h"

namespace user {

namespace {
UserWord* shared_word(int64_t addr) { return reinterpret_cast<UserWord*>(addr); }
}  // namespace

Task<int64_t> SliceExtClient::init(Thread& t) {
  int64_t ret = 0;
  switch (abi_) {
    case SliceAbi::None:
      break;
    case SliceAbi::Rfc:
      ret = co_await t.syscall(kernel::NR_task_getshared, kernel::TASK_SHAREDINFO, 0,
                               reinterpret_cast<int64_t>(&shared_addr_));
      break;
    case SliceAbi::Rseq2023:
      ret = t.rseq() ? 0 : -ENOSYS;  // the prototype needs only the registered rseq area
      break;
    case SliceAbi::Mainline:
      ret = co_await t.syscall(kernel::NR_prctl, kernel::PR_RSEQ_SLICE_EXTENSION,
                               kernel::PR_RSEQ_SLICE_EXTENSION_SET, kernel::PR_RSEQ_SLICE_EXT_ENABLE);
      break;
  }
  active_ = abi_ != SliceAbi::None && ret == 0;
  co_return ret;
}

void SliceExtClient::request(Thread& t) {
  if (!active_) return;
  requested_ = true;
  c_.requests++;
  switch (abi_) {
    case SliceAbi::Rfc: shared_word(shared_addr_)->value = kernel::TASK_PREEMPT_DELAY_REQ; break;
    case SliceAbi::Rseq2023: t.rseq()->flags |= kernel::RSEQ_CS_FLAG_DELAY_RESCHED; break;
    case SliceAbi::Mainline: t.rseq()->slice_request = 1; break;
    case SliceAbi::None: break;
  }
}

bool SliceExtClient::release(Thread& t) {
  if (!active_ || !requested_) return false;
  requested_ = false;
  bool granted = false;
  switch (abi_) {
    case SliceAbi::Rfc: {
      UserWord* w = shared_word(shared_addr_);
      const int64_t v = w->value;
      w->value = 0;
      granted = v == kernel::TASK_PREEMPT_DELAY_GRANTED;
      if (v == kernel::TASK_PREEMPT_DELAY_DENIED) c_.denials++;
      break;
    }
    case SliceAbi::Rseq2023: {
      kernel::rseq_area* rs = t.rseq();
      granted = !(rs->flags & kernel::RSEQ_CS_FLAG_DELAY_RESCHED);  // BTR found it clear
      rs->flags &= ~kernel::RSEQ_CS_FLAG_DELAY_RESCHED;
      break;
    }
    case SliceAbi::Mainline: {
      kernel::rseq_area* rs = t.rseq();
      rs->slice_request = 0;
      granted = rs->slice_granted != 0;
      break;
    }
    case SliceAbi::None: break;
  }
  if (granted) c_.grants++;
  return granted;
}

Thread::Action SliceExtClient::yield(Thread& t) {
  c_.yields++;
  return abi_ == SliceAbi::Mainline ? t.syscall(kernel::NR_rseq_slice_yield) : t.sched_yield();
}

}  // namespace user
