// UDP sockets: the receive queue and recvmsg() of net/ipv4/udp.c and net/core/sock.c,
// 6.12 .. 7.0.
//
// Enqueue (__udp_enqueue_schedule_skb(), in the NET_RX context that processed the packet,
// inside its per-packet cost): a socket whose sk_rmem_alloc is above sk_rcvbuf drops the
// datagram (sk_drops, UDP RcvbufErrors and InErrors); otherwise the skb's truesize is charged
// to sk_rmem_alloc, it joins sk_receive_queue, and sock_def_readable() wakes the oldest
// exclusive waiter (wake_up_interruptible_sync_poll(): WF_SYNC, one task).
//
// recvmsg() (udp_recvmsg() -> __skb_recv_udp()): under spin_lock_bh() of the reader queue,
// take its first skb or, if it is empty, splice sk_receive_queue onto it first; the
// spin_unlock_bh() is a local_bh_enable(), which runs the softirqs pending on the CPU (or,
// for a flagged task on a kernel with the latency_sensi_flag patch, wakes ksoftirqd). Memory
// goes back to sk_rmem_alloc in udp_rmem_release()'s batches: once a quarter of sk_rcvbuf has
// been dequeued, or when the reader queue is empty. No datagram: the task sleeps in
// __skb_wait_for_more_packets() unless the queue filled meanwhile (the softirqs its own
// local_bh_enable() ran may have queued some), and tries again when woken.
#include "kernel/net/sock.h"

#include <algorithm>

#include "kernel/cpu_exec.h"
#include "kernel/entry/common.h"
#include "kernel/kernel_impl.h"
#include "kernel/net/dev.h"
#include "kernel/softirq.h"
#include "kernel/syscalls.h"

namespace kernel {

namespace {

constexpr int kMaxRcvbuf = 1 << 28;  // 256 MiB, beyond any net.core.rmem_max in use

udp_sock* sock_of(KernelImpl* k, int64_t fd) {
  if (!k->net || fd < 0 || fd >= static_cast<int64_t>(k->net->socks.size())) return nullptr;
  return k->net->socks[static_cast<size_t>(fd)].get();
}

// udp_rmem_release(sk, size, partial = 1): the memory of a dequeued skb is given back in
// batches of forward_threshold, or at once when the reader queue has run empty.
void udp_rmem_release(udp_sock* us, int size) {
  us->forward_deficit += size;
  if (us->forward_deficit < us->forward_threshold && us->reader != 0) return;
  us->rmem_alloc -= us->forward_deficit;
  us->forward_deficit = 0;
}

// A datagram on the queue at clock point `at` (its NET_RX work has ended).
bool udp_head_visible(const udp_sock* us, sim::Time at) {
  return us->count > 0 && us->ring[us->head].enqueued <= at;
}

// sock_def_readable() at `at`: wake the oldest waiter then (at once if `at` has passed).
void udp_wake_at(udp_sock* us, sim::Time at) {
  if (us->wait.empty() || us->wake_timer.armed) return;
  us->k->engine()->arm(&us->wake_timer, std::max(at, us->k->now()));
}

// The wake-ups, on the CPU that queued the datagrams: each datagram queued while tasks sleep
// on the socket wakes one of them, the oldest (exclusive waiters; receiver_wake_function() ->
// autoremove_wake_function() takes it off the queue). One per datagram now on the queue, and
// again at the next one's enqueue while tasks still sleep.
void udp_wake_fn(sim::Timer* t, sim::Time now) {
  udp_sock* us = static_cast<udp_sock*>(t->ctx);
  rq* rq = us->k->rq_of(us->wake_cpu);
  size_t i = 0, pos = us->head;
  while (!us->wait.empty() && i < us->count && us->ring[pos].enqueued <= now) {
    task_struct* p = us->wait.front();
    us->wait.erase(us->wait.begin());
    us->k->set_current(rq->curr, rq->cpu);
    try_to_wake_up(us->k, p, WF_SYNC);  // wake_up_interruptible_sync_poll()
    ++i;
    pos = pos + 1 == us->ring.size() ? 0 : pos + 1;
  }
  if (!us->wait.empty() && i < us->count) us->k->engine()->arm(&us->wake_timer, us->ring[pos].enqueued);
  // The NET_RX work ran in an interrupt's exit or a local_bh_enable(), whose way back (to the
  // idle loop, to user mode) the model took at the work's start. A wakeup that asks this CPU
  // to reschedule is acted on there now, which is still that work's time: the switch queues
  // behind the rest of it. On an idle CPU do_idle() sees need_resched() and schedules (as
  // after a polled wakeup); a task is preempted at the interrupt's (or the syscall's) return
  // to user mode, exit_to_user_mode_loop(). A kernel thread's own preemption points come
  // between its rounds.
  if (!tif_need_resched_any(rq->curr)) return;
  if (rq->curr->is_idle) {
    do_idle_schedule(rq, now);
  } else if (!rq->curr->kthread_fn && now <= rq->ex.kwork_until) {
    cpu_enter_kernel(rq, now);
    exit_to_user_mode_loop(rq, /*from_irq=*/true);
    cpu_return_to_user(rq);
  }
}

// __skb_try_recv_from_queue() on the reader queue, refilled from sk_receive_queue
// (skb_queue_splice_tail_init()) when empty; the skb's destructor releases its memory.
// Only a datagram already queued at clock point `at` is taken.
bool udp_dequeue(udp_sock* us, sim::Time at, udp_skb* out) {
  if (!udp_head_visible(us, at)) return false;
  if (us->reader == 0) us->reader = us->count;
  *out = us->ring[us->head];
  us->head = us->head + 1 == us->ring.size() ? 0 : us->head + 1;
  us->count--;
  us->reader--;
  udp_rmem_release(us, us->truesize);
  return true;
}

// recvmsg(fd, len, rx_timestamp, flags): arg[0] = the socket's index, arg[1] = the buffer's
// length, arg[2] = an int64_t* that receives the datagram's arrival at the NIC (what
// SO_TIMESTAMPING's hardware receive timestamp reports; 0: not asked), arg[3] = flags (0).
// Returns the bytes copied (the datagram, cut to the buffer), -EBADF or -EINVAL.
int64_t sys_recvmsg(rq* rq, task_struct* p, const UserAction& a) {
  udp_sock* us = sock_of(rq->k, a.arg[0]);
  if (!us) return -EBADF;
  if (a.arg[1] < 0 || a.arg[3] != 0) return -EINVAL;
  udp_skb skb;
  for (;;) {
    local_bh_disable(rq);  // spin_lock_bh(&up->reader_queue.lock)
    const bool got = udp_dequeue(us, kernel_clock(rq, rq->k->now()), &skb);
    local_bh_enable(rq);   // spin_unlock_bh(): pending softirqs run (or are handed off) here
    if (got) break;
    // __skb_wait_for_more_packets(): the queue changed meanwhile, no sleep.
    if (udp_head_visible(us, kernel_clock(rq, rq->k->now()))) continue;
    // prepare_to_wait_exclusive() at the tail of sk_wq, schedule_timeout(): the handler goes
    // on where it slept (it runs again) when sock_def_readable() wakes the task. A datagram
    // whose NET_RX work is still running wakes it when it ends.
    us->wait.push_back(p);
    if (us->count > 0) udp_wake_at(us, us->ring[us->head].enqueued);
    us->stats.recvmsg_blocked++;
    p->__state = TASK_INTERRUPTIBLE;
    p->exec = ExecKind::SyscallEntry;
    p->pending_syscall = a;
    return 0;
  }
  const int64_t copied = std::min<int64_t>(a.arg[1], skb.len);
  const hw::Costs& c = rq->k->machine_.costs;
  cpu_charge(rq, c.udp_recvmsg_ns + copied * c.copy_to_user_ps_per_byte / 1000);
  us->stats.received++;  // UDP_MIB_INDATAGRAMS
  us->stats.queue_wait.add(std::max<sim::Time>(0, kernel_clock(rq, rq->k->now()) - skb.enqueued));
  if (a.arg[2]) *reinterpret_cast<int64_t*>(a.arg[2]) = skb.arrival;  // put_cmsg(SCM_TIMESTAMPING)
  return copied;
}

}  // namespace

std::string validate_udp_sock_attr(const UdpSockAttr& a) {
  if (a.rcvbuf < 1 || a.rcvbuf > kMaxRcvbuf)
    return "rcvbuf: must be in 1.." + std::to_string(kMaxRcvbuf) + " bytes (got " + std::to_string(a.rcvbuf) + ")";
  if (a.truesize < 256 || a.truesize > 65536)
    return "truesize: must be in 256..65536 bytes (got " + std::to_string(a.truesize) + ")";
  return "";
}

int udp_sock_add(KernelImpl* k, const UdpSockAttr& a) {
  net_state* net = net_state_of(k);
  auto us = std::make_unique<udp_sock>();
  us->rcvbuf = a.rcvbuf;
  us->truesize = a.truesize;
  us->forward_threshold = a.rcvbuf >> 2;  // udp_lib_init_sock()
  // Admitted while sk_rmem_alloc <= sk_rcvbuf, each charging at least truesize: at most
  // rcvbuf / truesize + 1 datagrams are queued at once.
  us->ring.resize(static_cast<size_t>(a.rcvbuf / a.truesize) + 1);
  us->wait.reserve(64);  // udp-flood's most server threads
  us->k = k;
  us->wake_timer.ctx = us.get();
  us->wake_timer.fn = udp_wake_fn;
  net->socks.push_back(std::move(us));
  return static_cast<int>(net->socks.size()) - 1;
}

int udp_sock_count(const KernelImpl& k) { return k.net ? static_cast<int>(k.net->socks.size()) : 0; }

const UdpSockStats& udp_sock_stats(const KernelImpl& k, int sock) {
  return k.net->socks[static_cast<size_t>(sock)]->stats;
}

void udp_queue_rcv_skb(rq* rq, int sock, sim::Time arrival, sim::Time at, int len) {
  udp_sock* us = rq->k->net->socks[static_cast<size_t>(sock)].get();
  // __udp_enqueue_schedule_skb(): "always allow at least a packet"; drop once above rcvbuf.
  if (us->rmem_alloc > us->rcvbuf) {
    us->stats.rcvbuf_errors++;  // sk_drops; UDP_MIB_RCVBUFERRORS (and INERRORS)
    return;
  }
  us->rmem_alloc += us->truesize;
  size_t tail = us->head + us->count;
  if (tail >= us->ring.size()) tail -= us->ring.size();
  us->ring[tail] = {arrival, at, len};
  us->count++;
  us->stats.enqueued++;
  us->stats.queue_max = std::max<uint64_t>(us->stats.queue_max, us->count);
  us->wake_cpu = rq->cpu;
  udp_wake_at(us, at);  // sock_def_readable(): skwq_has_sleeper() -> wake one waiter
}

void register_net_syscalls() { register_syscall(NR_recvmsg, sys_recvmsg); }

}  // namespace kernel
