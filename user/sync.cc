// Spin lock, futex mutex and barrier over user words.
#include "user/sync.h"

#include <cstdio>
#include <cstdlib>

namespace user {

namespace {
// Two owners at once means the model broke mutual exclusion: stop with the state.
void set_owner(int* owner, int pid) {
  if (*owner != -1) {
    std::fprintf(stderr, "schedlab: BUG: lock owned by %d acquired by %d\n", *owner, pid);
    std::abort();
  }
  *owner = pid;
}
}  // namespace

bool SpinLock::try_lock(Thread& t) {
  if (t.load(&word_) != 0 || !t.cmpxchg(&word_, 0, 1)) return false;
  set_owner(&owner_, t.pid());
  t.locks_held++;
  t.trace_span("lock held");
  return true;
}

Task<> SpinLock::lock(Thread& t) {
  while (!try_lock(t)) co_await wait_unlocked(t);
}

void SpinLock::unlock(Thread& t) {
  owner_ = -1;
  t.locks_held--;
  t.trace_span(nullptr);
  t.store(&word_, 0);
}

// Drepper, "Futexes Are Tricky", mutex #2: 0 free, 1 locked, 2 locked and contended.
Task<> Mutex::lock(Thread& t) {
  int64_t c = t.load(&word_);
  if (!(c == 0 && t.cmpxchg(&word_, 0, 1))) {
    if (c != 2) c = t.exchange(&word_, 2);
    while (c != 0) {
      co_await t.futex_wait(&word_, 2);
      c = t.exchange(&word_, 2);
    }
  }
  set_owner(&owner_, t.pid());
  t.locks_held++;
  t.trace_span("lock held");
}

Task<> Mutex::unlock(Thread& t) {
  owner_ = -1;
  t.locks_held--;
  t.trace_span(nullptr);
  if (t.fetch_add(&word_, -1) != 1) {
    t.store(&word_, 0);
    co_await t.futex_wake(&word_, 1);
  }
}

Task<> Barrier::arrive_and_wait(Thread& t) {
  const int64_t gen = t.load(&generation_);
  if (t.fetch_add(&arrived_, 1) + 1 == parties_) {
    t.store(&arrived_, 0);
    t.store(&generation_, gen + 1);
    co_await t.futex_wake(&generation_, parties_);
    co_return;
  }
  while (t.load(&generation_) == gen) co_await t.futex_wait(&generation_, gen);
}

}  // namespace user
