// hackbench (rt-tests / LTP): `groups` groups of `fds` senders and `fds` receivers. Every
// sender writes `loops` messages of `datasize` bytes to each receiver of its group, in turn
// (write(out_fds[j]) for j in 0..fds, `loops` times); every receiver reads fds x loops
// messages from its own pipe or socket. The run time is from the start signal (all tasks
// ready) to the last task done, as hackbench prints it ("Time: ..."). Senders and receivers
// are processes (hackbench's default) or threads of one process (-T).
//
// A pipe or socket is a bounded message count on a user word with futex waits: a reader
// blocks while it is empty, a writer while it is full (on a word of its own: the writers'
// wait queue), and each wakes the other side when Linux does. A write into an empty buffer
// wakes the reader (pipe_write(), unix_stream_sendmsg()'s sk_data_ready()). The writers:
//  - pipe (fs/pipe.c): they wait exclusively (wait_event_interruptible_exclusive() on
//    wr_wait); a read from a full pipe wakes one, and a writer that waited and leaves room
//    wakes the next (wake_next_writer);
//  - unix stream socket (net/unix/af_unix.c): a writer waits in sock_wait_for_wmem() while
//    sk_wmem_alloc >= sk_sndbuf, non-exclusively; the reader's skb free calls
//    unix_write_space(), which wakes them all once unix_writable(), a quarter of the buffer
//    or less in use.
// A wake-up is a futex_wake() only when writers wait (waitqueue_active()). The copy in and
// out costs `write_cost` and `read_cost` of CPU time each (user time here: the model has no
// read/write system calls).
#include <algorithm>
#include <memory>

#include "user/sync.h"
#include "workloads/common.h"

namespace workloads {

namespace {

struct Channel {
  kernel::UserWord msgs;        // messages in the pipe or socket buffer
  kernel::UserWord space;       // the writers' wait queue: bumped at each wake-up of it
  kernel::UserWord wr_waiters;  // writers asleep on it
};

struct Shared {
  int fds = 0;
  int loops = 0;
  int64_t capacity = 0;   // messages the buffer holds
  bool pipe = false;      // transport: pipe, else unix stream socket
  int64_t write_cost = 0;
  int64_t read_cost = 0;
  int rounds = 0;         // 0 = repeat until the run ends
  int tasks = 0;
  std::unique_ptr<user::Barrier> start;
  std::unique_ptr<Channel[]> channels;  // one per receiver
  int started_round = -1;
  int64_t round_start = 0;
  int done = 0;           // tasks done with the current round
  int completed = 0;      // rounds completed
  int64_t total_ns = 0;   // their summed run time
  uint64_t messages = 0;
};

// The round's start (the first task out of the start barrier) and end (the last task done).
void round_begins(user::Thread& t, Shared* s, int round) {
  if (s->started_round == round) return;
  s->started_round = round;
  s->round_start = t.now();
}
void task_done(user::Thread& t, Shared* s) {
  if (++s->done < s->tasks) return;
  s->done = 0;
  ++s->completed;
  s->total_ns += t.now() - s->round_start;
}

// Before wake_up_interruptible_sync_poll() on the writers' wait queue: whether a writer
// waits (waitqueue_active()), the wake-up marked for one about to sleep.
bool writers_to_wake(user::Thread& t, Channel* ch) {
  if (t.load(&ch->wr_waiters) == 0) return false;
  t.fetch_add(&ch->space, 1);
  return true;
}

user::Program sender(user::Thread& t, Shared* s, Channel* group) {
  for (int round = 0; s->rounds == 0 || round < s->rounds; ++round) {
    co_await s->start->arrive_and_wait(t);
    round_begins(t, s, round);
    for (int i = 0; i < s->loops; ++i) {
      for (int j = 0; j < s->fds; ++j) {
        Channel& ch = group[j];
        co_await t.compute(s->write_cost);
        // Wait for room: pipe_write()'s wait on wr_wait, sock_alloc_send_pskb()'s
        // sock_wait_for_wmem().
        bool waited = false;
        for (;;) {
          const int64_t seq = t.load(&ch.space);
          if (t.load(&ch.msgs) < s->capacity) break;
          t.fetch_add(&ch.wr_waiters, 1);
          co_await t.futex_wait(&ch.space, seq);
          t.fetch_add(&ch.wr_waiters, -1);
          waited = true;
        }
        const int64_t n = t.fetch_add(&ch.msgs, 1);
        if (n == 0) co_await t.futex_wake(&ch.msgs, 1);  // the reader sleeps only when empty
        // pipe_write()'s wake_next_writer: room left after a write that waited.
        if (s->pipe && waited && n + 1 < s->capacity && writers_to_wake(t, &ch))
          co_await t.futex_wake(&ch.space, 1);
        ++s->messages;
      }
    }
    task_done(t, s);
  }
}

user::Program receiver(user::Thread& t, Shared* s, Channel* ch) {
  const int64_t expected = static_cast<int64_t>(s->fds) * s->loops;
  for (int round = 0; s->rounds == 0 || round < s->rounds; ++round) {
    co_await s->start->arrive_and_wait(t);
    round_begins(t, s, round);
    for (int64_t got = 0; got < expected;) {
      if (t.load(&ch->msgs) == 0) {
        co_await t.futex_wait(&ch->msgs, 0);
        continue;
      }
      co_await t.compute(s->read_cost);
      ++got;
      const int64_t n = t.fetch_add(&ch->msgs, -1);
      // pipe_read() wakes one writer when the pipe was full; unix_write_space() every
      // writer while unix_writable().
      const bool wake = s->pipe ? n >= s->capacity : (n - 1) * 4 <= s->capacity;
      const int nr = s->pipe ? 1 : kMaxThreads;
      if (wake && writers_to_wake(t, ch)) co_await t.futex_wake(&ch->space, nr);
    }
    task_done(t, s);
  }
}

class Hackbench : public Workload {
 public:
  std::string setup(kernel::Kernel& k, const Params& p, uint64_t seed) override {
    const int groups = p.get_int_in("groups", 1, kMaxThreads);
    s_.fds = p.get_int_in("fds", 1, kMaxThreads);
    s_.loops = p.get_int_in("loops", 1, 1000000000);
    const int datasize = p.get_int_in("datasize", 1, 1 << 20);
    int capacity = p.get_int_in("capacity", -1, 1 << 30);
    s_.rounds = p.get_int_in("rounds", 0, 1000000000);
    s_.write_cost = p.get_ns("write_cost");
    s_.read_cost = p.get_ns("read_cost");
    if (!p.error().empty()) return p.error();
    const std::string kind = p.get("kind"), transport = p.get("transport");
    if (kind != "process" && kind != "thread")
      return "kind: expected process or thread (got '" + kind + "')";
    if (transport != "socket" && transport != "pipe")
      return "transport: expected socket or pipe (got '" + transport + "')";
    if (capacity == 0) return "capacity: must be >= 1 or -1 (got '0')";
    if (s_.write_cost < 0) return "write_cost: must be >= 0 (got '" + p.get("write_cost") + "')";
    if (s_.read_cost < 0) return "read_cost: must be >= 0 (got '" + p.get("read_cost") + "')";
    if (static_cast<int64_t>(groups) * 2 * s_.fds > kMaxThreads)
      return "groups: groups x 2 x fds must be at most " + std::to_string(kMaxThreads) +
             " tasks (got '" + std::to_string(groups) + "' x 2 x " + std::to_string(s_.fds) + ")";
    // A pipe holds 16 pages (PIPE_DEF_BUFFERS) and pipe_write() merges small writes into
    // the last page; a unix stream socket holds sk_sndbuf (net.core.wmem_default, 212992)
    // of skb truesize, assumed 1 KiB per small message.
    if (capacity < 0) capacity = transport == "pipe" ? std::max(1, 16 * 4096 / datasize) : 212992 / 1024;
    s_.capacity = capacity;
    s_.pipe = transport == "pipe";
    s_.tasks = groups * 2 * s_.fds;
    s_.start = std::make_unique<user::Barrier>(s_.tasks);
    s_.channels = std::make_unique<Channel[]>(static_cast<size_t>(groups) * s_.fds);
    const bool threads = kind == "thread";
    const int tgid = threads ? k.create_process("hackbench") : 0;
    kernel::TaskAttr attr;
    attr.comm = "hackbench";
    int n = 0;
    // hackbench forks each group's receivers, then its senders.
    for (int g = 0; g < groups; ++g) {
      Channel* group = &s_.channels[static_cast<size_t>(g) * s_.fds];
      for (int side = 0; side < 2; ++side) {
        for (int j = 0; j < s_.fds; ++j) {
          auto th = std::make_unique<user::Thread>(&k, sim::Rng(seed, n++));
          if (side == 0)
            th->start(receiver(*th, &s_, &group[j]));
          else
            th->start(sender(*th, &s_, group));
          k.create_thread(threads ? tgid : k.create_process("hackbench"), attr, std::move(th));
        }
      }
    }
    return "";
  }

  void report(const kernel::KernelStats&, sim::Time, report::Results* r) override {
    if (s_.completed == 0)
      r->notices.push_back("hackbench: no round completed within the run; raise the duration");
    const double mean = s_.completed ? static_cast<double>(s_.total_ns) / s_.completed / 1e9 : -1.0;
    r->metrics.push_back({"hackbench_time_s", mean, "s",
                          "run time of a round, start signal to last task done (mean; -1: none)"});
    r->metrics.push_back({"hackbench_rounds", static_cast<double>(s_.completed), "",
                          "rounds completed"});
    r->metrics.push_back({"hackbench_messages", static_cast<double>(s_.messages), "",
                          "messages written"});
  }

 private:
  Shared s_;
};

}  // namespace

WorkloadInfo hackbench_workload() {
  return {"hackbench",
          "groups of senders and receivers over pipes or sockets; run time per round",
          {{"groups", "10", "groups (hackbench -g)"},
           {"fds", "20", "senders and receivers per group (-f)"},
           {"loops", "100", "messages each sender writes to each receiver (-l)"},
           {"datasize", "100", "bytes per message (-s); sets the default capacity"},
           {"kind", "process", "process or thread (-T): tasks in processes of their own or one process"},
           {"transport", "socket", "socket (default) or pipe (-p)"},
           {"capacity", "-1", "messages a pipe or socket holds (-1 = the transport's, see docs)"},
           {"write_cost", "500ns", "CPU time of one write (assumed)"},
           {"read_cost", "500ns", "CPU time of one read (assumed)"},
           {"rounds", "1", "runs of the whole benchmark (0 = repeat until the run ends)"}},
          [] { return std::make_unique<Hackbench>(); }};
}

}  // namespace workloads
