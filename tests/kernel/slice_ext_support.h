// Helpers the slice-extension tests share: a kernel configuration per design, a pinned task's
// attributes, a hog, and a requester program that wraps critical sections in the extension.
#pragma once
#include <functional>

#include "tests/kernel/harness.h"
#include "user/slice_ext.h"

namespace slice_ext_support {

using Abi = kernel::SliceExtAbi;

inline kernel::KernelConfig config(Abi abi) {
  kernel::KernelConfig c = kernel::default_config(kernel::KernelVersion::V7_0);
  c.slice_ext.abi = abi;
  return c;
}

inline kernel::TaskAttr on(int cpu) {
  kernel::TaskAttr a;
  a.cpus = {cpu};
  return a;
}

inline user::Program hog(user::Thread& t) {
  for (;;) co_await t.compute(1000000000);
}

// Results a requester program leaves for the test.
struct Seen {
  int64_t init_ret = 1;
  uint64_t grants = 0, yields = 0, denials = 0, requests = 0;
  int64_t last_yield_ret = -100;
  int64_t word_after_grant = -1;
};

// Critical sections of `cs` with think time `think`, each wrapped in the extension.
inline std::function<user::Program(user::Thread&)> requester(Abi abi, Seen* seen, int64_t cs, int64_t think) {
  return [=](user::Thread& t) -> user::Program {
    user::SliceExtClient ext(abi);
    seen->init_ret = co_await ext.init(t);
    for (;;) {
      ext.request(t);
      co_await t.compute(cs);
      if (ext.release(t)) seen->last_yield_ret = co_await ext.yield(t);
      seen->grants = ext.counters().grants;
      seen->yields = ext.counters().yields;
      seen->denials = ext.counters().denials;
      seen->requests = ext.counters().requests;
      co_await t.compute(think);
    }
  };
}


}  // namespace slice_ext_support
