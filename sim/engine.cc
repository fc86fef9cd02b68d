// The engine's event loop: a 4-ary heap of small POD entries with lazy cancellation.
#include "sim/engine.h"

#include <algorithm>
#include <cassert>

namespace sim {

namespace {
constexpr size_t kArity = 4;
}

Engine::Engine() { heap_.reserve(4096); }

void Engine::enqueue(Timer* t, Time when) {
  if (t->id == 0) {
    t->id = static_cast<uint32_t>(timers_.size());
    assert(t->id < (1u << kIdBits) && "too many timers");
    timers_.push_back(t);
  }
  t->qseq = seq_++;
  push(Entry{when, t->qseq << kIdBits | t->id});
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

void Engine::push(const Entry& e) {
  heap_.push_back(e);
  if (heap_.size() > max_queued_) max_queued_ = heap_.size();
  size_t i = heap_.size() - 1;
  while (i > 0) {
    size_t parent = (i - 1) / kArity;
    if (!before(e, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

void Engine::pop() {
  const Entry last = heap_.back();
  heap_.pop_back();
  if (heap_.empty()) return;
  heap_[0] = last;
  sift_down(0);
}

void Engine::sift_down(size_t i) {
  const Entry e = heap_[i];
  const unsigned __int128 er = rank(e);
  const size_t n = heap_.size();
  Entry* h = heap_.data();
  for (;;) {
    const size_t first = i * kArity + 1;
    if (first >= n) break;
    size_t best = first;
    unsigned __int128 br = rank(h[first]);
    if (first + kArity <= n) {
      // All four children exist: pick the least without branching on the data.
      const unsigned __int128 r1 = rank(h[first + 1]), r2 = rank(h[first + 2]),
                              r3 = rank(h[first + 3]);
      const bool a = r1 < br;
      best = a ? first + 1 : best;
      br = a ? r1 : br;
      const bool b = r3 < r2;
      const size_t b_idx = b ? first + 3 : first + 2;
      const unsigned __int128 b_r = b ? r3 : r2;
      const bool c = b_r < br;
      best = c ? b_idx : best;
      br = c ? b_r : br;
    } else {
      for (size_t c = first + 1; c < n; ++c) {
        const unsigned __int128 r = rank(h[c]);
        if (r < br) best = c, br = r;
      }
    }
    if (!(br < er)) break;
    h[i] = h[best];
    i = best;
  }
  h[i] = e;
}

// Drops stale entries once they outnumber live ones, in place (no allocation), then
// re-heapifies. Sequence numbers are kept, so the order of events is unchanged.
void Engine::compact() {
  size_t w = 0;
  for (const Entry& e : heap_) {
    const Timer* t = timer_of(e);
    if (t->armed && t->qseq == seq_of(e)) heap_[w++] = e;
  }
  heap_.resize(w);
  if (w > 1)
    for (size_t i = (w - 2) / kArity + 1; i-- > 0;) sift_down(i);
  stale_ = 0;
}

bool Engine::run_until(Time end) {
  stopped_ = false;
  while (!heap_.empty()) {
    if (stale_ > 1024 && stale_ > heap_.size() / 2) compact();
    if (heap_.empty()) break;
    const Entry e = heap_.front();
    if (e.when > end) break;
    pop();
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
    t->fn(t, now_);
    if (stopped_) return false;
  }
  if (end > now_) now_ = end;
  return true;
}

}  // namespace sim
