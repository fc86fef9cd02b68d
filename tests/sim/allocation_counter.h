// Counts heap allocations: replaces the global operator new (and the deletes that pair with
// it) for the tests that pin "the steady state allocates nothing". Replacement functions
// cannot be inline, so include this in exactly one source file of a test binary.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace testing_support {
inline std::atomic<uint64_t> allocations{0};  // operator new calls so far
}  // namespace testing_support

void* operator new(size_t n) {
  testing_support::allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// The replacements pair with the operator new above (malloc), but g++ 12 inlines them into
// callers and then sees free() of memory from `new`: a false -Wmismatched-new-delete.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop
