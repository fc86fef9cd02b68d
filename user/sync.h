// Synchronisation built on user words, as a C library would build it: a test-and-test-and-set
// spin lock (hand-off costs one cache-line transfer to each spinner), a futex mutex
// (Drepper's three-state lock) and a futex barrier. Lock ownership is tracked to count
// lock-holder preemptions and to check that a lock never has two owners.
#pragma once
#include "user/thread.h"

namespace user {

class SpinLock {
 public:
  // One attempt: true iff the lock was free and is now held by t.
  bool try_lock(Thread& t);
  // Spins until the lock looks free (it may be taken again before t tries).
  Thread::Action wait_unlocked(Thread& t) { return t.spin_while_eq(&word_, 1); }
  // Spins and retries until held.
  Task<> lock(Thread& t);
  void unlock(Thread& t);
  bool locked() const { return word_.value != 0; }
  int owner() const { return owner_; }
  UserWord* word() { return &word_; }

 private:
  UserWord word_;
  int owner_ = -1;  // pid of the holder, valid iff locked()
};

class Mutex {
 public:
  Task<> lock(Thread& t);
  Task<> unlock(Thread& t);
  int owner() const { return owner_; }

 private:
  UserWord word_;   // 0 free, 1 locked, 2 locked with waiters
  int owner_ = -1;
};

class Barrier {
 public:
  explicit Barrier(int parties) : parties_(parties) {}
  // Blocks until `parties` threads have arrived.
  Task<> arrive_and_wait(Thread& t);

 private:
  int parties_;
  UserWord arrived_;
  UserWord generation_;
};

}  // namespace user
