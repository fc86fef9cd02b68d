// The RFC's per-process [task_shared] mapping (Prakash Sangappa, Nov 2024, patch 1/4):
// pinned pages of PAGE_SIZE / 128 = 32 slots, one struct task_sharedinfo per thread, a
// used-slot bitmap and a free-slot count per page, pages with free slots at the head of the
// process's list. Owned by the process's mm_struct.
#pragma once
#include <cstdint>
#include <list>
#include <memory>
#include <vector>

#include "kernel/sched/mm_cid.h"
#include "kernel/uapi.h"

namespace kernel {

inline constexpr int TASK_SHARED_SLOTS = 4096 / 128;  // PAGE_SIZE / sizeof(union task_shared)
static_assert(TASK_SHARED_SLOTS == 32, "the RFC puts 32 slots in a 4 KiB page");

struct task_shared_page {
  int id = 0;
  uint64_t bitmap = 0;           // used slots
  int nr_free = TASK_SHARED_SLOTS;
  UserWord slots[TASK_SHARED_SLOTS];  // sched_delay of each thread's struct task_sharedinfo
};

struct mm_struct {
  int tgid = 0;
  std::vector<std::unique_ptr<task_shared_page>> pages;  // ownership, by id
  std::list<task_shared_page*> free_list;  // pages with free slots first, full ones last
  int nr_pages_allocated = 0;              // ever, for statistics
  mm_mm_cid cid;                           // rseq concurrency IDs (kernel/sched/mm_cid.h)
};

// Allocates a slot for a thread: from the head page if it has room, else a new page at
// the head (unless `page_limit` pages exist: nullptr = -ENOMEM).
UserWord* task_shared_alloc(mm_struct* mm, int page_limit, int* page_id, int* slot);
// Frees a slot; the page moves back to the head of the list.
void task_shared_free(mm_struct* mm, int page_id, int slot);

}  // namespace kernel
