// The engine's event loop: a timing wheel of nanosecond lists for the near future and a multi-level
// radix heap beyond it, of small POD entries with lazy cancellation.
#include "sim/engine.h"

#include <algorithm>
#include <cassert>
#include <iterator>

namespace sim {

Engine::Engine() {
  entries_.reserve(4096);
  std::fill(ring_.get(), ring_.get() + kRingSlots, kNil);
}


inline void Engine::place(uint32_t i) {
  const uint64_t d = (static_cast<uint64_t>(entries_[i].when) >> kSlotBits) - slot_;
  if (d == 0) {
    place_sub(i);
  } else if (d < kRingSlots) {
    const uint32_t r = static_cast<uint32_t>(slot_ + d) & (kRingSlots - 1);
    entries_[i].next = ring_[r];
    ring_[r] = i;
    ring_mask_[r / 64] |= uint64_t{1} << (r % 64);
    ring_group_[r / 4096] |= uint64_t{1} << (r / 64 % 64);
    ring_sum_ |= uint64_t{1} << (r / 4096);
  } else {
    const Time when = entries_[i].when;
    if (far_size_++ == 0 || when < far_least_) far_least_ = when;
    far_place(i);
  }
}

__attribute__((noinline)) void Engine::far_place(uint32_t i) {
  const Time when = entries_[i].when;
  const uint64_t x = static_cast<uint64_t>(when ^ last_);
  if (x == 0) {
    append(&now_q_, i);
    return;
  }
  const unsigned level = (63u - static_cast<unsigned>(__builtin_clzll(x))) / kDigitBits;
  const unsigned digit =
      static_cast<unsigned>(static_cast<uint64_t>(when) >> (level * kDigitBits)) & (kDigits - 1);
  append(&buckets_[level][digit], i);
  digit_mask_[level][digit / 64] |= uint64_t{1} << (digit % 64);
  word_mask_[level] |= 1u << (digit / 64);
  level_mask_ |= 1u << level;
}

// The pool is used up: drop the stale entries if they outnumber the live ones (lazy
// deletion otherwise frees an entry only when its time comes), else grow it; either way
// the free list then has an entry. Compacting only here, not on every event, is what bounds
// the pool, and takes no time while it does not need to grow.
__attribute__((noinline, cold)) void Engine::grow_pool() {
  if (stale_ > 1024 && stale_ > size_ / 2) compact();
  if (free_ != kNil) return;
  entries_.push_back(Entry{});
  free_ = static_cast<uint32_t>(entries_.size() - 1);
  entries_[free_].next = kNil;
}

void Engine::enqueue(Timer* t, Time when) {
  t->qseq = seq_++;
  if (__builtin_expect(free_ == kNil, 0)) grow_pool();
  const uint32_t i = free_;
  free_ = entries_[i].next;
  entries_[i].when = when;
  entries_[i].seq = t->qseq;
  entries_[i].timer = t;
  place(i);
  ++size_;
}

void Engine::arm(Timer* t, Time when) {
  assert(when >= now_ && "a timer cannot be armed in the past");
  if (t->armed && when >= t->expires) {
    t->expires = when;  // deferred: the queued entry re-queues itself when it comes up
    return;
  }
  if (t->armed) ++stale_;
  t->armed = true;
  t->expires = when;
  enqueue(t, when);
}

void Engine::cancel(Timer* t) {
  if (!t->armed) return;
  t->armed = false;
  ++stale_;
}

// Every entry of the bucket agrees with last_ (now the bucket's least possible time, at or
// below every entry) above digit `level`, so each moves to a lower level or to now_q_ (those
// at last_), in the order they were queued. Each timer, armed long ago and likely out of
// the cache, starts loading now.
__attribute__((noinline)) void Engine::relink(List* src) {
  uint32_t i = src->head;
  *src = List{};
  while (i != kNil) {
    const uint32_t next = entries_[i].next;
    __builtin_prefetch(entries_[i].timer);
    far_place(i);
    i = next;
  }
}

uint32_t Engine::far_take(Time end) {
  for (;;) {
    if (!now_q_.empty()) {
      if (last_ > end) {
        far_least_ = last_;
        return kNil;
      }
      const uint32_t i = now_q_.head;
      now_q_.head = entries_[i].next;
      if (now_q_.head == kNil) now_q_.tail = kNil;
      --far_size_;
      return i;
    }
    if (level_mask_ == 0) return kNil;
    const int level = __builtin_ctz(level_mask_);
    const int word = __builtin_ctz(word_mask_[level]);
    const int digit = word * 64 + __builtin_ctzll(digit_mask_[level][word]);
    List& src = buckets_[level][digit];
    // One entry (the common case near the front) is the least: its time. Otherwise the
    // bucket's lower edge: last_'s digits above `level`, `digit` there, zeros below; a
    // level-0 bucket holds that one time. (No scan for the least entry: relinking
    // against the edge moves each entry down a level at least.)
    const bool one = src.head == src.tail;
    const int shift = level * kDigitBits;
    const Time edge = static_cast<Time>(
        (static_cast<uint64_t>(last_) & (~uint64_t{0} << shift << kDigitBits)) |
        (static_cast<uint64_t>(digit) << shift));
    const Time least = one ? entries_[src.head].when : edge;
    if (least > end) {
      far_least_ = least;
      return kNil;
    }
    last_ = least;
    digit_mask_[level][word] &= ~(uint64_t{1} << (digit % 64));
    if (digit_mask_[level][word] == 0) {
      word_mask_[level] &= ~(1u << word);
      if (word_mask_[level] == 0) level_mask_ &= ~(1u << level);
    }
    if (one) {  // the entry itself, without passing through now_q_
      const uint32_t i = src.head;
      src = List{};
      --far_size_;
      return i;
    }
    if (level == 0) {  // every entry is at last_: straight to now_q_
      now_q_ = src;
      src = List{};
      continue;
    }
    relink(&src);
  }
}

inline uint32_t Engine::next_ring_slot() const {
  const uint32_t p = static_cast<uint32_t>(slot_ + 1) & (kRingSlots - 1);
  const uint32_t w = p / 64;
  const uint64_t m = ring_mask_[w] & (~uint64_t{0} << (p % 64));
  if (m != 0) return w * 64 + static_cast<uint32_t>(__builtin_ctzll(m));
  if (ring_sum_ == 0) return kNil;
  // The words after w in its group, else the groups after its group, else from the first
  // (the ring wraps; the bits below p are the last slots of the window).
  const uint32_t g = w / 64;
  uint32_t w2;
  const uint64_t words_after = ring_group_[g] & (~uint64_t{1} << (w % 64));
  if (words_after != 0) {
    w2 = g * 64 + static_cast<uint32_t>(__builtin_ctzll(words_after));
  } else {
    const uint64_t groups_after = ring_sum_ & (~uint64_t{1} << g);
    const uint32_t g2 =
        static_cast<uint32_t>(__builtin_ctzll(groups_after != 0 ? groups_after : ring_sum_));
    w2 = g2 * 64 + static_cast<uint32_t>(__builtin_ctzll(ring_group_[g2]));
  }
  return w2 * 64 + static_cast<uint32_t>(__builtin_ctzll(ring_mask_[w2]));
}

inline void Engine::advance(uint64_t slot) {
  slot_ = slot;
  base_ = static_cast<Time>(slot << kSlotBits);
  if (far_size_ != 0) {
    // The last nanosecond of the window (no overflow: times are below 2^63).
    const uint64_t last = ((slot + kRingSlots) << kSlotBits) - 1;
    if (static_cast<uint64_t>(far_least_) <= last) migrate(last);
  }
}

__attribute__((noinline)) void Engine::migrate(uint64_t last) {
  const Time end = last > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<Time>(last);
  for (uint32_t i; (i = far_take(end)) != kNil;) place(i);
}

inline uint32_t Engine::take_least(Time end) {
  if (sub_mask_ != 0) return take_sub(end);
  return take_least_next_slot(end);
}

__attribute__((noinline)) uint32_t Engine::take_least_next_slot(Time end) {
  const uint32_t r = next_ring_slot();
  if (r != kNil) {
    const uint64_t slot = slot_ + ((r - slot_) & (kRingSlots - 1));
    if (static_cast<Time>(slot << kSlotBits) > end) return kNil;
    const uint32_t head = ring_[r];
    ring_[r] = kNil;
    ring_mask_[r / 64] &= ~(uint64_t{1} << (r % 64));
    if (ring_mask_[r / 64] == 0) {
      ring_group_[r / 4096] &= ~(uint64_t{1} << (r / 64 % 64));
      if (ring_group_[r / 4096] == 0) ring_sum_ &= ~(uint64_t{1} << (r / 4096));
    }
    advance(slot);
    // One entry (the common case) is the least; more are spread by nanosecond.
    if (entries_[head].next == kNil && entries_[head].when <= end) return head;
    for (uint32_t i = head; i != kNil;) {  // newest first: each goes on the front
      const uint32_t next = entries_[i].next;
      const unsigned ns = static_cast<unsigned>(entries_[i].when) & (kSlotNs - 1);
      List& l = sub_[ns];
      entries_[i].next = l.head;
      if (l.head == kNil) l.tail = i;
      l.head = i;
      sub_mask_ |= uint64_t{1} << ns;
      i = next;
    }
    return take_sub(end);
  }
  if (far_size_ == 0) return kNil;
  // The ring is empty: the least far entry is the least, and its slot becomes current.
  const uint32_t i = far_take(end);
  if (i != kNil) advance(static_cast<uint64_t>(entries_[i].when) >> kSlotBits);
  return i;
}

// Drops stale entries once they outnumber live ones. Each list keeps its order, so the
// order of events is unchanged.
void Engine::compact() {
  size_t dropped = 0;
  auto filter = [&](List* l) {
    uint32_t i = l->head;
    *l = List{};
    while (i != kNil) {
      const uint32_t next = entries_[i].next;
      if (live(entries_[i])) {
        append(l, i);
      } else {
        entries_[i].next = free_;
        free_ = i;
        --size_;
        ++dropped;
      }
      i = next;
    }
    return !l->empty();
  };
  auto filter_stack = [&](uint32_t* head) {
    List l{*head, kNil};  // filter() reads only the head
    filter(&l);
    *head = l.head;
    return !l.empty();
  };
  sub_mask_ = 0;
  for (int n = 0; n < kSlotNs; ++n)
    if (filter(&sub_[n])) sub_mask_ |= uint64_t{1} << n;
  ring_sum_ = 0;
  for (int g = 0; g < kRingGroups; ++g) {
    ring_group_[g] = 0;
    for (int w = g * 64; w < g * 64 + 64; ++w) {
      for (uint64_t m = ring_mask_[w]; m != 0; m &= m - 1) {  // the non-empty slots
        const int r = w * 64 + __builtin_ctzll(m);
        if (!filter_stack(&ring_[r])) ring_mask_[w] &= ~(uint64_t{1} << (r % 64));
      }
      if (ring_mask_[w]) ring_group_[g] |= uint64_t{1} << (w % 64);
    }
    if (ring_group_[g]) ring_sum_ |= uint64_t{1} << g;
  }
  dropped = 0;
  filter(&now_q_);
  level_mask_ = 0;
  for (int l = 0; l < kLevels; ++l) {
    word_mask_[l] = 0;
    for (int w = 0; w < kWords; ++w) {
      digit_mask_[l][w] = 0;
      for (int d = w * 64; d < w * 64 + 64; ++d)
        if (filter(&buckets_[l][d])) digit_mask_[l][w] |= uint64_t{1} << (d % 64);
      if (digit_mask_[l][w]) word_mask_[l] |= 1u << w;
    }
    if (word_mask_[l]) level_mask_ |= 1u << l;
  }
  far_size_ -= dropped;
  stale_ = 0;
}

bool Engine::run_until(Time end) {
  stopped_ = false;
  for (;;) {
    const uint32_t i = take_least(end);
    if (i == kNil) break;
    const Entry e = entries_[i];
    entries_[i].next = free_;
    free_ = i;
    --size_;
    Timer* t = timer_of(e);
    if (!t->armed || t->qseq != seq_of(e)) {
      if (stale_ > 0) --stale_;
      ++skipped_;
      continue;
    }
    if (e.when < t->expires) {  // pushed back since it was queued
      enqueue(t, t->expires);
      ++skipped_;
      continue;
    }
    t->armed = false;
    now_ = e.when;
    ++fired_;
    prefetch_next();
    t->fn(t, now_);
    if (stopped_) return false;
  }
  if (end > now_) now_ = end;
  return true;
}

}  // namespace sim
