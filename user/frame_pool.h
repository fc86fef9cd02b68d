// Where every coroutine frame of a simulated program comes from: per-size free lists, so
// that creating a nested helper in steady state reuses memory instead of calling malloc.
// One pool per OS thread (runs on different OS threads do not share it).
#pragma once
#include <cstddef>
#include <cstdint>

namespace user {

void* frame_alloc(size_t size);
void frame_free(void* p, size_t size);
// Number of times the pool had to ask the system allocator (for tests).
uint64_t frame_pool_system_allocations();

}  // namespace user
