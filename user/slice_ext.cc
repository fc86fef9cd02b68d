// User-side slice extension protocols: one table per design, the same steps the real
// library (real/slice_ext.h) takes.
#include "user/slice_ext.h"

#include <iterator>

namespace user {

namespace {

UserWord* shared_word(int64_t addr) { return reinterpret_cast<UserWord*>(addr); }

// The designs without a syscall of their own give the CPU back with sched_yield().
Thread::Action plain_sched_yield(Thread& t) { return t.sched_yield(); }

// none: no set-up, nothing to request.
Task<int64_t> none_init(Thread&, int64_t*) { co_return 0; }
void none_request(Thread&, int64_t) {}
bool none_release(Thread&, int64_t, bool*) { return false; }

// rfc: task_getshared() once; sched_delay = REQ before the critical section; after it read
// the word, write 0, and sched_yield() if it read GRANTED.
Task<int64_t> rfc_init(Thread& t, int64_t* shared_addr) {
  co_return co_await t.syscall(kernel::NR_task_getshared, kernel::TASK_SHAREDINFO, 0,
                               reinterpret_cast<int64_t>(shared_addr));
}
void rfc_request(Thread&, int64_t shared_addr) {
  shared_word(shared_addr)->value = kernel::TASK_PREEMPT_DELAY_REQ;
}
bool rfc_release(Thread&, int64_t shared_addr, bool* denied) {
  UserWord* w = shared_word(shared_addr);
  const int64_t v = w->value;
  w->value = 0;
  *denied = v == kernel::TASK_PREEMPT_DELAY_DENIED;
  return v == kernel::TASK_PREEMPT_DELAY_GRANTED;
}

// rseq2023: set bit 3 in rseq->flags; after, test-and-clear it: if the kernel had already
// cleared it, the extension was granted: sched_yield().
Task<int64_t> proto_init(Thread& t, int64_t*) {
  co_return t.rseq() ? 0 : -ENOSYS;  // the prototype needs only the registered rseq area
}
void proto_request(Thread& t, int64_t) { t.rseq()->flags |= kernel::RSEQ_CS_FLAG_DELAY_RESCHED; }
bool proto_release(Thread& t, int64_t, bool*) {
  kernel::rseq_area* rs = t.rseq();
  const bool granted = !(rs->flags & kernel::RSEQ_CS_FLAG_DELAY_RESCHED);  // BTR found it clear
  rs->flags &= ~kernel::RSEQ_CS_FLAG_DELAY_RESCHED;
  return granted;
}

// mainline: prctl(PR_RSEQ_SLICE_EXTENSION, SET, ENABLE) once; slice_ctrl.request = 1; after,
// request = 0 and read granted: if set, rseq_slice_yield().
Task<int64_t> mainline_init(Thread& t, int64_t*) {
  co_return co_await t.syscall(kernel::NR_prctl, kernel::PR_RSEQ_SLICE_EXTENSION,
                               kernel::PR_RSEQ_SLICE_EXTENSION_SET, kernel::PR_RSEQ_SLICE_EXT_ENABLE);
}
void mainline_request(Thread& t, int64_t) { t.rseq()->slice_request = 1; }
bool mainline_release(Thread& t, int64_t, bool*) {
  kernel::rseq_area* rs = t.rseq();
  rs->slice_request = 0;
  return rs->slice_granted != 0;
}
Thread::Action mainline_yield(Thread& t) { return t.syscall(kernel::NR_rseq_slice_yield); }

const SliceExtProtocol none_protocol = {false, none_init, none_request, none_release, plain_sched_yield};
const SliceExtProtocol rfc_protocol = {true, rfc_init, rfc_request, rfc_release, plain_sched_yield};
const SliceExtProtocol rseq2023_protocol = {true, proto_init, proto_request, proto_release, plain_sched_yield};
const SliceExtProtocol mainline_protocol = {true, mainline_init, mainline_request,
                                            mainline_release, mainline_yield};

}  // namespace

const SliceExtProtocol* slice_ext_protocol(SliceAbi abi) {
  // Indexed by SliceExtAbi: `<name>_protocol` for each line of kernel/slice_ext_designs.h.
  static const SliceExtProtocol* const kProtocols[] = {
      &none_protocol,
#define SLICE_EXT_DESIGN(Enum, name) &name##_protocol,
#include "kernel/slice_ext_designs.h"
#undef SLICE_EXT_DESIGN
  };
  static_assert(std::size(kProtocols) == kernel::kNrSliceExtAbi);
  return kProtocols[static_cast<int>(abi)];
}

Task<int64_t> SliceExtClient::init(Thread& t) {
  const int64_t ret = co_await proto_->init(t, &shared_addr_);
  active_ = proto_->configured && ret == 0;
  co_return ret;
}

void SliceExtClient::request_active(Thread& t) {
  requested_ = true;
  c_.requests++;
  t.trace_span("critical section");  // what the extension is asked for
  proto_->request(t, shared_addr_);
}

bool SliceExtClient::release_requested(Thread& t) {
  requested_ = false;
  t.trace_span(nullptr);
  bool denied = false;
  const bool granted = proto_->release(t, shared_addr_, &denied);
  if (denied) c_.denials++;
  if (granted) c_.grants++;
  return granted;
}

Thread::Action SliceExtClient::yield(Thread& t) {
  c_.yields++;
  return proto_->yield(t);
}

}  // namespace user
