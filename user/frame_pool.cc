// Frame pool: free lists in 64-byte size classes up to 4 KiB; larger frames go to the
// system allocator directly (a program frame is allocated once per thread).
#include "user/frame_pool.h"

#include <cstdlib>
#include <new>

namespace user {

namespace {

constexpr size_t kClass = 64;
constexpr size_t kClasses = 64;  // up to 4 KiB

struct FreeNode {
  FreeNode* next;
};

struct Pool {
  FreeNode* heads[kClasses] = {};
  uint64_t system_allocations = 0;
  ~Pool() {
    for (FreeNode*& h : heads)
      while (h) {
        FreeNode* n = h->next;
        std::free(h);
        h = n;
      }
  }
};

thread_local Pool pool;

size_t class_of(size_t size) { return (size + kClass - 1) / kClass; }

}  // namespace

void* frame_alloc(size_t size) {
  const size_t c = class_of(size);
  if (c < kClasses && pool.heads[c]) {
    FreeNode* n = pool.heads[c];
    pool.heads[c] = n->next;
    return n;
  }
  ++pool.system_allocations;
  void* p = std::malloc(c < kClasses ? c * kClass : size);
  if (!p) throw std::bad_alloc();
  return p;
}

void frame_free(void* p, size_t size) {
  const size_t c = class_of(size);
  if (c >= kClasses) {
    std::free(p);
    return;
  }
  FreeNode* n = static_cast<FreeNode*>(p);
  n->next = pool.heads[c];
  pool.heads[c] = n;
}

uint64_t frame_pool_system_allocations() { return pool.system_allocations; }

}  // namespace user
