// The discrete-event engine: a virtual clock and a queue of re-armable timers.
// Knows nothing of Linux. Events are totally ordered by (time, insertion sequence), so the
// same inputs always replay identically. Owned by one run; single-threaded.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/time.h"

namespace sim {

class Engine;

// An intrusive, re-armable event source, owned by whoever embeds it (a CPU, a task).
// Arming again replaces the earlier expiry; cancel is O(1): the queue drops entries whose
// generation no longer matches (lazy deletion), so no event is ever searched for.
// Re-arming to a LATER time only records it: the queued entry, when it comes up, is
// re-queued at the recorded time (a timer pushed back by every tick costs nothing until
// it is due). Its place among events of equal time is then that of the re-queueing.
struct Timer {
  using Fn = void (*)(Timer* t, Time now);
  Fn fn = nullptr;
  void* ctx = nullptr;   // owner, for the callback
  uint32_t arg = 0;      // free for the owner (e.g. a CPU number)
  bool armed = false;    // valid iff an entry with sequence `qseq` is queued
  Time expires = 0;      // valid iff armed
  uint32_t id = 0;       // the engine's index of this timer (0 = not yet seen)
  uint64_t qseq = 0;     // sequence number of the live queue entry
};

class Engine {
 public:
  Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Time now() const { return now_; }

  // Arms t to fire at `when` (>= now()); replaces any earlier arming of t.
  void arm(Timer* t, Time when);
  void cancel(Timer* t);

  // Fires events in order while their time is <= end; the clock then reads `end`
  // (or the time of the event that called stop()). Returns false if stopped early.
  bool run_until(Time end);
  // Makes run_until return after the current event.
  void stop() { stopped_ = true; }

  uint64_t events_fired() const { return fired_; }
  // Queue entries taken off without firing: cancelled or re-armed earlier (stale), or
  // pushed back (deferred). For benchmarks.
  uint64_t entries_skipped() const { return skipped_; }
  size_t max_queued() const { return max_queued_; }
  size_t queued() const { return heap_.size(); }

 private:
  // 16 bytes, so a node's 4 children share one cache line: the sequence number in the high
  // bits of `key` orders equal times, the timer's index is in the low bits.
  static constexpr int kIdBits = 22;
  struct Entry {
    Time when;
    uint64_t key;  // seq << kIdBits | timer id
  };
  // (when, key) as one unsigned 128-bit number (times are >= 0): one comparison the
  // compiler can turn into flag arithmetic and conditional moves, no data-dependent branch.
  static unsigned __int128 rank(const Entry& e) {
    return (static_cast<unsigned __int128>(static_cast<uint64_t>(e.when)) << 64) | e.key;
  }
  static bool before(const Entry& a, const Entry& b) { return rank(a) < rank(b); }
  Timer* timer_of(const Entry& e) const { return timers_[e.key & ((1u << kIdBits) - 1)]; }
  static uint64_t seq_of(const Entry& e) { return e.key >> kIdBits; }
  void enqueue(Timer* t, Time when);
  void push(const Entry& e);
  void pop();
  void sift_down(size_t i);
  void compact();

  Time now_ = 0;
  uint64_t seq_ = 0;
  uint64_t fired_ = 0;
  uint64_t skipped_ = 0;
  size_t max_queued_ = 0;
  size_t stale_ = 0;  // entries whose timer was re-armed or cancelled since
  bool stopped_ = false;
  std::vector<Entry> heap_;  // 4-ary min-heap on (when, seq)
  std::vector<Timer*> timers_{nullptr};  // by id; id 0 unused
};

}  // namespace sim
