// The discrete-event engine: a virtual clock and a queue of re-armable timers.
// Knows nothing of Linux. Events are totally ordered by (time, insertion sequence), so the
// same inputs always replay identically. Owned by one run; single-threaded.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
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
  size_t queued() const { return size_; }

 private:
  // A queued arming of a timer: its time, insertion sequence and timer, linked into one
  // list of the queue. Equal times fire in sequence order. 32 bytes, aligned: an entry never
  // straddles two cache lines, and its timer is one load away (no table of timers).
  static constexpr uint32_t kNil = UINT32_MAX;
  struct alignas(32) Entry {
    Time when;
    uint64_t seq;
    Timer* timer;
    uint32_t next;  // index of the next entry of the same list, or kNil
  };
  // A FIFO list of entries, by index into entries_.
  struct List {
    uint32_t head = kNil, tail = kNil;
    bool empty() const { return head == kNil; }
  };
  // The queue has three parts, by how far ahead an entry is of the current slot, the
  // 2^kSlotBits ns of time that holds `base_` (the start of the slot of the last entry taken
  // off, so <= now()):
  // - in the current slot: `sub_`, a list per nanosecond, each in sequence order, with a
  //   mask of the non-empty ones; the least is the head of the first non-empty list;
  // - in one of the next kRingSlots - 1 slots: `ring_`, a list per slot (a timing wheel
  //   indexed by the slot number modulo kRingSlots), newest first, with a three-level mask;
  // - further ahead: a multi-level radix heap (below).
  // When the current slot is used up, the next non-empty slot of the ring becomes current
  // (or, if the ring is empty, the slot of the least far entry), and the far entries that
  // the ring's window now reaches move into it. The new slot's entry, if alone, is the
  // least; more are spread over sub_ by nanosecond (read newest first, each pushed on the
  // front of its list, which restores the order of queueing). Most entries are due within
  // the window when armed, so they are filed once and taken off directly. Equal times keep
  // insertion order: a ring slot receives the far entries it will ever hold (in (time,
  // sequence) order) when it enters the window, before any entry armed into it directly
  // (all later in sequence).
  static constexpr int kSlotBits = 6;
  static constexpr int kSlotNs = 1 << kSlotBits;  // one bit of sub_mask_ each
  static constexpr int kRingBits = 16;  // a window of 4.2 ms: most timers are armed within it
  static constexpr uint64_t kRingSlots = uint64_t{1} << kRingBits;
  static constexpr int kRingWords = static_cast<int>(kRingSlots / 64);
  static constexpr int kRingGroups = kRingWords / 64;  // of 64 words
  static_assert(kSlotNs == 64 && kRingGroups >= 1 && kRingGroups <= 64, "masks are 64 bits wide");
  // The far queue is a multi-level radix heap, in effect a hierarchical timing wheel that
  // never cascades on a clock: simulated time never goes back, so an entry can be filed by
  // where its time first differs from `last_`, a lower bound of every queued time (the time
  // of the last entry taken off, or the lower edge of the last bucket emptied). Times are
  // read as 8-bit digits. `now_q_` holds the entries at exactly `last_`; bucket [l][d]
  // those whose highest digit differing from `last_` is digit l and is d there. Every entry
  // of a lower level, and of a lower digit within a level, is earlier than every entry of a
  // higher one. Taking the least entry empties the first non-empty bucket: one entry (or a
  // level-0 bucket, all of one time) goes to now_q_; more are relinked into lower ones
  // against the bucket's lower edge. Lists stay in sequence order (appends come in
  // sequence order, and a bucket is refilled only when it and every lower one are empty),
  // so equal times keep insertion order. Entries of all parts live in one pool with a free
  // list, so the queue allocates only when it grows past its peak.
  static constexpr int kDigitBits = 8;
  static constexpr int kDigits = 1 << kDigitBits;
  static constexpr int kWords = kDigits / 64;                          // of a digit mask
  static constexpr int kLevels = (63 + kDigitBits - 1) / kDigitBits;  // times are >= 0
  static_assert(kDigits >= 64 && kWords <= 32 && kLevels <= 32, "masks are 64/32 bits wide");
  static Timer* timer_of(const Entry& e) { return e.timer; }
  static uint64_t seq_of(const Entry& e) { return e.seq; }
  bool live(const Entry& e) const {
    const Timer* t = timer_of(e);
    return t->armed && t->qseq == seq_of(e);
  }
  void enqueue(Timer* t, Time when);
  // The rare path of enqueue, out of line so the common one needs few registers: compacts
  // or grows the pool, leaving an entry on the free list.
  void grow_pool();
  void append(List* l, uint32_t i) {
    entries_[i].next = kNil;
    if (l->tail == kNil)
      l->head = i;
    else
      entries_[l->tail].next = i;
    l->tail = i;
  }
  // Files entry i (at or after base_) in sub_, ring_ or far_.
  void place(uint32_t i);
  void place_sub(uint32_t i) {
    const unsigned ns = static_cast<unsigned>(entries_[i].when) & (kSlotNs - 1);
    append(&sub_[ns], i);
    sub_mask_ |= uint64_t{1} << ns;
  }
  // Files entry i in the far radix heap, by how its time differs from last_.
  void far_place(uint32_t i);
  // Takes the earliest far entry off and returns its index, or kNil if there is none due
  // at or before `end` (then *least, if given, is a lower bound of the far entries' times).
  uint32_t far_take(Time end);
  // The ring index of the first non-empty ring slot after the current one, or kNil.
  uint32_t next_ring_slot() const;
  // Makes slot `slot` current and moves the far entries the window now reaches into it.
  void advance(uint64_t slot);
  // Moves the far entries due by `last` (the window's last nanosecond) into the ring.
  void migrate(uint64_t last);
  // Takes the earliest entry off the queue and returns its index, or kNil if the queue is
  // empty or its earliest entries are due after `end` (they stay queued).
  uint32_t take_least(Time end);
  // take_least when sub_ is empty: makes the next non-empty slot current.
  uint32_t take_least_next_slot(Time end);
  // Takes the head of the first non-empty list of sub_ (there is one) if due by `end`.
  uint32_t take_sub(Time end) {
    const unsigned ns = static_cast<unsigned>(__builtin_ctzll(sub_mask_));
    if (base_ + static_cast<Time>(ns) > end) return kNil;
    List& l = sub_[ns];
    const uint32_t i = l.head;
    l.head = entries_[i].next;
    if (l.head == kNil) {
      l.tail = kNil;
      sub_mask_ &= sub_mask_ - 1;
    }
    return i;
  }
  void relink(List* src);
  // Drops the stale entries (see grow_pool).
  void compact();
  // Starts loading the timer of a likely next event (the head of the first non-empty
  // list of sub_, or of the next ring slot if within 64 slots), so that its cache miss
  // overlaps the current event's work. No effect on order.
  // Inlined before GCC's pure-const pass: as a call it is found pure (a prefetch has no
  // side effect) and, its result unused, deleted with the prefetch.
  __attribute__((always_inline)) void prefetch_next() const {
    uint32_t i = kNil;
    if (sub_mask_ != 0) {
      i = sub_[__builtin_ctzll(sub_mask_)].head;
    } else {
      const uint32_t p = static_cast<uint32_t>(slot_ + 1) & (kRingSlots - 1);
      const uint64_t m = ring_mask_[p / 64] & (~uint64_t{0} << (p % 64));
      if (m != 0) i = ring_[(p & ~63u) + static_cast<uint32_t>(__builtin_ctzll(m))];
    }
    if (i != kNil) __builtin_prefetch(timer_of(entries_[i]));
  }

  Time now_ = 0;
  uint64_t seq_ = 0;
  uint64_t fired_ = 0;
  uint64_t skipped_ = 0;
  size_t stale_ = 0;  // entries whose timer was re-armed or cancelled since
  bool stopped_ = false;
  size_t size_ = 0;         // entries queued
  uint64_t slot_ = 0;       // the current slot: base_ >> kSlotBits
  Time base_ = 0;           // its first nanosecond
  uint64_t sub_mask_ = 0;   // bit n: sub_[n] has entries
  uint64_t ring_sum_ = 0;   // bit g: ring_group_[g] != 0
  uint64_t ring_group_[kRingGroups] = {};  // bit w%64 of word w/64: ring_mask_[w] != 0
  uint64_t ring_mask_[kRingWords] = {};  // bit s%64 of word s/64: ring_[s] has entries
  List sub_[kSlotNs];
  // Heads of the slot lists, each last-in first (a stack): 256 KB, so on the heap (an Engine
  // is often a local variable, and compare runs one per worker thread).
  std::unique_ptr<uint32_t[]> ring_{new uint32_t[kRingSlots]};
  size_t far_size_ = 0;     // entries in the far radix heap
  Time far_least_ = 0;      // <= every far entry's time
  Time last_ = 0;           // <= every far entry's time (see above)
  List now_q_;              // far entries at last_, in sequence order
  // Which buckets have entries: bit d%64 of digit_mask_[l][d/64] for bucket [l][d], with
  // summaries of the non-zero words per level and of the non-empty levels.
  uint32_t level_mask_ = 0;
  uint32_t word_mask_[kLevels] = {};
  uint64_t digit_mask_[kLevels][kWords] = {};
  List buckets_[kLevels][kDigits];
  std::vector<Entry> entries_;  // the pool
  uint32_t free_ = kNil;        // free list through Entry::next
};

}  // namespace sim
