// [task_shared] slot allocator (RFC patch 1/4: task_shared_alloc / task_shared_free order).
#include "kernel/task_shared.h"

#include <cassert>

#include "kernel/kernel_impl.h"
#include "kernel/slice_ext.h"

namespace kernel {

UserWord* task_shared_alloc(mm_struct* mm, int page_limit, int* page_id, int* slot) {
  task_shared_page* page = mm->free_list.empty() ? nullptr : mm->free_list.front();
  if (!page || page->nr_free == 0) {
    // The head page is full (or there is none): only then is a new page allocated.
    if (page_limit > 0 && static_cast<int>(mm->pages.size()) >= page_limit) return nullptr;
    auto p = std::make_unique<task_shared_page>();
    p->id = static_cast<int>(mm->pages.size());
    page = p.get();
    mm->pages.push_back(std::move(p));
    mm->free_list.push_front(page);
    mm->nr_pages_allocated++;
  }
  const int s = __builtin_ctzll(~page->bitmap);
  assert(s < TASK_SHARED_SLOTS);
  page->bitmap |= 1ULL << s;
  page->nr_free--;
  page->slots[s] = UserWord{};
  if (page->nr_free == 0) {  // full: to the tail
    mm->free_list.remove(page);
    mm->free_list.push_back(page);
  }
  *page_id = page->id;
  *slot = s;
  return &page->slots[s];
}

void task_shared_free(mm_struct* mm, int page_id, int slot) {
  task_shared_page* page = mm->pages[page_id].get();
  assert(page->bitmap & (1ULL << slot));
  page->bitmap &= ~(1ULL << slot);
  page->nr_free++;
  // A page that regains a free slot goes back to the head.
  mm->free_list.remove(page);
  mm->free_list.push_front(page);
}

void task_shared_release(task_struct* p) {
  if (!p->slice.shared || !p->mm) return;
  task_shared_free(p->mm, p->slice.shared_page, p->slice.shared_slot);
  p->slice.shared = nullptr;
  p->slice.shared_page = p->slice.shared_slot = -1;
}

}  // namespace kernel
