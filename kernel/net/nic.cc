// A NIC receive queue and the kernel half of its driver: packet arrivals, the descriptor
// ring, the receive interrupt (hardirq or forced-threaded), and the driver's NAPI poll.
#include "kernel/net/nic.h"

#include <cmath>


#include "kernel/cpu_exec.h"
#include "kernel/entry/common.h"
#include "kernel/kernel_impl.h"
#include "kernel/net/sock.h"
#include "kernel/softirq.h"

namespace kernel {

namespace {

constexpr uint64_t kNetFlowStream = 0x6e6574666c6f7700;  // "netflow": one rng stream per flow

net_device* dev_of_irq_thread(KernelImpl* k, const task_struct* p) {
  for (auto& d : k->net->devs)
    if (d->irq_thread == p) return d.get();
  return nullptr;
}

// The queue's interrupt handler on its CPU. The driver's handler masks the queue's interrupt
// and calls napi_schedule() (mlx5e_completion_event() and the like); forced threading
// (irq_setup_forced_threading()) leaves the hardirq only irq_default_primary_handler(),
// which wakes the thread.
void nic_irq_handler(net_device* d, sim::Time now) {
  KernelImpl* k = d->k;
  rq* rq = k->rq_of(d->irq_cpu);
  d->stats.irqs++;
  irqentry_enter(rq, now);
  if (d->irq_thread) {
    d->irq_thread_pending = true;  // __irq_wake_thread()
    try_to_wake_up(k, d->irq_thread, 0);
  } else {
    cpu_charge(rq, k->machine_.costs.net_rx_irq_ns);
    napi_schedule(rq, &d->napi);
  }
  irqentry_exit(rq);
}

// The queue raises its interrupt: the coalescing interval counts from here, and the handler
// runs now, or once an idle CPU has left its idle state (the device knows nothing of it).
void nic_interrupt(net_device* d, sim::Time now) {
  d->last_irq = now;
  if (cpu_idle_exit_defer(d->k->rq_of(d->irq_cpu), &d->irq_timer, now)) return;
  nic_irq_handler(d, now);
}

// Packets are on the ring and the interrupt is unmasked: raise it, or once the coalescing
// interval since the last one has passed.
void nic_maybe_interrupt(net_device* d, sim::Time now) {
  if (d->napi.sched || d->irq_thread_pending || d->irq_timer.armed || d->count == 0) return;
  if (d->coalesce_ns > 0 && d->last_irq >= 0 && now < d->last_irq + d->coalesce_ns) {
    if (!d->coalesce_timer.armed) d->k->engine()->arm(&d->coalesce_timer, d->last_irq + d->coalesce_ns);
    return;
  }
  nic_interrupt(d, now);
}

void nic_coalesce_fn(sim::Timer* t, sim::Time now) { nic_maybe_interrupt(static_cast<net_device*>(t->ctx), now); }
void nic_irq_fn(sim::Timer* t, sim::Time now) {
  nic_irq_handler(static_cast<net_device*>(t->ctx), now);
}

// A burst of a flow reaches the NIC: onto the ring while there is room, dropped after; the
// interrupt fires unless it is masked (NAPI scheduled, or the thread not yet run).
void net_flow_fn(sim::Timer* t, sim::Time now) {
  net_flow* f = static_cast<net_flow*>(t->ctx);
  net_device* d = f->dev;
  const size_t size = d->ring.size();
  for (int i = 0; i < f->burst; ++i) {
    d->stats.packets_arrived++;
    if (d->count == size) {
      d->stats.packets_dropped++;
      continue;
    }
    d->ring[(d->head + d->count) % size] = {now, f->sock, f->len};
    d->count++;
  }
  const sim::Time next = now + 1 + static_cast<sim::Time>(f->rng.exponential(f->mean_gap_ns));
  if (d->end == 0 || next < d->end) d->k->engine()->arm(t, next);
  nic_maybe_interrupt(d, now);
}

// irq_thread() -> irq_forced_thread_fn(): local_bh_disable(); the driver's handler;
// local_bh_enable(), which runs the NET_RX the handler raised, in this thread. Nothing to do:
// sleep.
void nic_irq_thread_fn(rq* rq, task_struct* p) {
  net_device* d = dev_of_irq_thread(rq->k, p);
  if (!d->irq_thread_pending) {
    p->__state = TASK_INTERRUPTIBLE;
    schedule(rq, /*preempt=*/false);
  } else {
    d->irq_thread_pending = false;
    local_bh_disable(rq);
    cpu_charge(rq, rq->k->machine_.costs.net_rx_irq_ns);
    napi_schedule(rq, &d->napi);
    local_bh_enable(rq);
  }
  exit_to_user_mode_loop(rq, /*from_irq=*/false);
  cpu_return_to_user(rq);
}

}  // namespace

std::string validate_nic_attr(const KernelImpl& k, const NicRxQueueAttr& a) {
  if (a.irq_cpu < 0 || a.irq_cpu >= k.nr_cpus())
    return "irq_cpu: CPU " + std::to_string(a.irq_cpu) + " does not exist (the machine has " +
           std::to_string(k.nr_cpus()) + ")";
  if (a.rx_usecs_ns < 0 || a.rx_usecs_ns > 1000000000)
    return "rx_usecs: must be in 0..1s (got " + std::to_string(a.rx_usecs_ns) + " ns)";
  if (a.ring_size < 1 || a.ring_size > 1 << 20)
    return "ring_size: must be in 1..1048576 (got " + std::to_string(a.ring_size) + ")";
  for (const NetFlowAttr& f : a.flows) {
    if (!(f.rate_pps >= 0) || f.rate_pps > 1e9 || !std::isfinite(f.rate_pps))
      return "rate: must be in 0..1e9 packets/s (got " + std::to_string(f.rate_pps) + ")";
    if (f.burst < 1 || f.burst > 1 << 20)
      return "burst: must be in 1..1048576 (got " + std::to_string(f.burst) + ")";
    if (f.sock < -1 || f.sock >= udp_sock_count(k))
      return "sock: no UDP socket " + std::to_string(f.sock) + " (there are " + std::to_string(udp_sock_count(k)) + ")";
    if (f.len < 0 || f.len > 65507)
      return "len: a UDP payload is 0..65507 bytes (got " + std::to_string(f.len) + ")";
  }
  return "";
}

int netdev_add(KernelImpl* k, const NicRxQueueAttr& a) {
  net_state* net = net_state_of(k);
  netdev_reserve_poll_lists(k);
  const int index = static_cast<int>(net->devs.size());
  auto d = std::make_unique<net_device>();
  d->k = k;
  d->name = a.name;
  d->irq_cpu = a.irq_cpu;
  d->end = a.end;
  d->coalesce_ns = a.rx_usecs_ns;
  d->coalesce_timer.ctx = d.get();
  d->coalesce_timer.fn = nic_coalesce_fn;
  d->irq_timer.ctx = d.get();
  d->irq_timer.fn = nic_irq_fn;
  d->ring.assign(static_cast<size_t>(a.ring_size), nic_rx_desc{});
  d->napi.dev = d.get();
  d->napi.napi_id = 8192 + index;  // napi_hash_add(): ids start above NR_CPUS (MIN_NAPI_ID)
  const SoftirqConfig& sc = k->cfg_.softirq;
  if (sc.napi_threaded) {  // napi_kthread_create(): kthread_run(), not bound, nice 0
    TaskAttr attr;
    attr.comm = "napi/" + a.name + "-" + std::to_string(d->napi.napi_id);
    d->napi.thread = kthread_create(k, attr, napi_threaded_fn);
  }
  if (sc.threadirqs || sc.preempt_rt) {  // setup_irq_thread(): sched_set_fifo(), MAX_RT_PRIO / 2
    TaskAttr attr;
    attr.comm = "irq/" + std::to_string(24 + index) + "-" + a.name;
    attr.policy = SCHED_FIFO;
    attr.rt_priority = 50;
    attr.cpus = {a.irq_cpu};  // irq_thread_check_affinity(): follows the interrupt's affinity
    d->irq_thread = kthread_create(k, attr, nic_irq_thread_fn);
  }
  for (size_t i = 0; i < a.flows.size(); ++i) {
    const NetFlowAttr& fa = a.flows[i];
    if (fa.rate_pps <= 0) continue;
    auto f = std::make_unique<net_flow>();
    f->dev = d.get();
    f->burst = fa.burst;
    f->sock = fa.sock;
    f->len = fa.len;
    f->mean_gap_ns = 1e9 * fa.burst / fa.rate_pps;
    f->rng = sim::Rng(k->cfg_.seed, kNetFlowStream + static_cast<uint64_t>(index) * 4096 + i);
    f->timer.ctx = f.get();
    f->timer.fn = net_flow_fn;
    k->engine()->arm(&f->timer, a.start);  // the first burst at the start, then Poisson
    d->flows.push_back(std::move(f));
  }
  net->devs.push_back(std::move(d));
  return index;
}

int netdev_count(const KernelImpl& k) { return k.net ? static_cast<int>(k.net->devs.size()) : 0; }

const NetRxStats& netdev_rx_stats(const KernelImpl& k, int dev) {
  return k.net->devs[static_cast<size_t>(dev)]->stats;
}

int netdev_napi_thread_pid(const KernelImpl& k, int dev) {
  const task_struct* t = k.net->devs[static_cast<size_t>(dev)]->napi.thread;
  return t ? t->pid : 0;
}

int netdev_irq_thread_pid(const KernelImpl& k, int dev) {
  const task_struct* t = k.net->devs[static_cast<size_t>(dev)]->irq_thread;
  return t ? t->pid : 0;
}

int nic_poll(rq* rq, napi_struct* n, int budget, sim::Time at, int ctx, sim::Time* cost) {
  net_device* d = n->dev;
  const sim::Time per_packet = d->k->machine_.costs.net_rx_packet_ns;
  const size_t size = d->ring.size();
  int work = 0;
  sim::Time t = at;
  while (work < budget && d->count > 0) {
    t += per_packet;  // the packet's receive path up to the socket enqueue
    const nic_rx_desc& desc = d->ring[d->head];
    d->stats.latency.add(t - desc.arrival);
    if (desc.sock >= 0) udp_queue_rcv_skb(rq, desc.sock, desc.arrival, t, desc.len);
    d->head = (d->head + 1) % size;
    d->count--;
    work++;
  }
  *cost = t - at;
  NetRxStats& st = d->stats;
  st.polls++;
  st.packets_received += static_cast<u64>(work);
  st.packets[static_cast<size_t>(ctx)] += static_cast<u64>(work);
  st.ns[static_cast<size_t>(ctx)] += static_cast<u64>(*cost);
  if (work < budget)
    n->sched = false;  // napi_complete_done(): unmask the queue's interrupt
  else
    st.repolls++;
  return work;
}

}  // namespace kernel
