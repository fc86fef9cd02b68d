// NAPI and NET_RX: net/core/dev.c of 6.12 .. 7.0.
//
// net_rx_action() runs as the NET_RX action of a softirq pass (kernel/softirq.cc): it takes
// the CPU's poll list, polls each instance once with its weight (the driver takes packets off
// its ring at the machine's per-packet cost, kernel/net/nic.cc), and stops when the budget
// (netdev_budget, 300) is used up or jiffies reach the time limit (netdev_budget_usecs,
// 2 jiffies); instances that used their whole weight are repolled, and a non-empty list
// raises NET_RX again for the next pass or ksoftirqd. Threaded NAPI moves the polling to a
// kthread per instance: ____napi_schedule() wakes it and raises nothing.
#include "kernel/net/dev.h"

#include "kernel/cpu_exec.h"
#include "kernel/entry/common.h"
#include "kernel/kernel_impl.h"
#include "kernel/net/nic.h"
#include "kernel/softirq.h"

namespace kernel {

const char* const net_rx_ctx_name[NR_NET_RX_CTX] = {"irq_exit", "bh_enable", "ksoftirqd", "irq_thread",
                                                    "napi_thread"};

namespace {

// Where the NET_RX action now runs, from the softirq invocation's context.
int net_rx_ctx(const rq* rq) {
  switch (rq->softirq.ctx) {
    case SOFTIRQ_AT_IRQ_EXIT: return NET_RX_AT_IRQ_EXIT;
    case SOFTIRQ_IN_KSOFTIRQD: return NET_RX_IN_KSOFTIRQD;
    default: break;
  }
  // At a local_bh_enable(): of a forced-threaded handler (irq_forced_thread_fn()), or of a task.
  for (const auto& d : rq->k->net->devs)
    if (d->irq_thread == rq->curr) return NET_RX_IN_IRQ_THREAD;
  return NET_RX_AT_BH_ENABLE;
}

// __napi_poll(): one driver poll with the instance's weight. A poll that used the whole
// weight leaves the instance scheduled and puts it on `repoll`; less, and the driver has
// completed it (napi_complete_done()) and unmasked its interrupt.
int napi_poll(rq* rq, napi_struct* n, sim::Time at, int ctx, std::vector<napi_struct*>* repoll, sim::Time* cost) {
  const int work = nic_poll(rq, n, n->weight, at, ctx, cost);
  if (work == n->weight) repoll->push_back(n);
  return work;
}

// net_rx_action(): the NET_RX softirq action, run by a pass at clock point `at`; returns the
// time it took.
sim::Time net_rx_action(rq* rq, sim::Time at) {
  KernelImpl* k = rq->k;
  softnet_data& sd = k->net->sd[static_cast<size_t>(rq->cpu)];
  const KernelConfig& cfg = k->cfg_;
  const sim::Time tick = cfg.tick_nsec();
  const u64 time_limit = static_cast<u64>(at / tick) + netdev_budget_jiffies(cfg);
  int budget = cfg.softirq.netdev_budget;
  const int ctx = net_rx_ctx(rq);
  sim::Time t = at;
  // list_splice_init(&sd->poll_list, &list)
  sd.list.swap(sd.poll_list);
  sd.poll_list.clear();
  sd.repoll.clear();
  size_t i = 0;
  while (i < sd.list.size()) {
    napi_struct* n = sd.list[i++];
    sim::Time cost = 0;
    budget -= napi_poll(rq, n, t, ctx, &sd.repoll, &cost);
    t += cost;
    // "If softirq window is exhausted then punt": budget, or time_after_eq(jiffies, time_limit).
    if (budget <= 0 || static_cast<u64>(t / tick) >= time_limit) {
      sd.time_squeeze++;
      break;
    }
  }
  // list_splice_tail_init(&sd->poll_list, &list); list_splice_tail(&repoll, &list);
  // list_splice(&list, &sd->poll_list): the instances not polled, then the repolled ones.
  for (size_t j = i; j < sd.list.size(); ++j) sd.poll_list.push_back(sd.list[j]);
  for (napi_struct* n : sd.repoll) sd.poll_list.push_back(n);
  sd.list.clear();
  // __raise_softirq_irqoff(NET_RX_SOFTIRQ): the restart check or ksoftirqd picks it up.
  if (!sd.poll_list.empty()) rq->softirq.pending |= 1u << NET_RX_SOFTIRQ;
  return t - at;
}

napi_struct* napi_of_thread(KernelImpl* k, const task_struct* p) {
  for (auto& d : k->net->devs)
    if (d->napi.thread == p) return &d->napi;
  return nullptr;
}

}  // namespace

net_state* net_state_of(KernelImpl* k) {
  if (!k->net) {
    k->net = std::make_unique<net_state>();
    k->net->sd.resize(static_cast<size_t>(k->nr_cpus()));
    for (int cpu = 0; cpu < k->nr_cpus(); ++cpu)
      k->rq_of(cpu)->softirq.action[NET_RX_SOFTIRQ] = net_rx_action;  // open_softirq()
  }
  return k->net.get();
}

u64 netdev_budget_jiffies(const KernelConfig& cfg) {
  // netdev_budget_usecs = 2 * USEC_PER_SEC / HZ; usecs_to_jiffies() rounds up.
  const long long usecs = cfg.softirq.netdev_budget_usecs >= 0 ? cfg.softirq.netdev_budget_usecs
                                                               : 2 * 1000000LL / cfg.hz;
  return static_cast<u64>((usecs * cfg.hz + 999999) / 1000000);
}

void netdev_reserve_poll_lists(KernelImpl* k) {
  net_state* net = net_state_of(k);
  const size_t n = net->devs.size() + 1;
  for (softnet_data& sd : net->sd) {
    sd.poll_list.reserve(n);
    sd.list.reserve(n);
    sd.repoll.reserve(n);
  }
}

// ____napi_schedule(): a threaded instance wakes its thread (no softirq); otherwise it joins
// this CPU's poll list and NET_RX is raised (raise_softirq_irqoff(): from a hardirq or a
// BH-disabled section this wakes nothing; the exit of either runs it).
void napi_schedule(rq* rq, napi_struct* n) {
  if (n->sched) return;  // napi_schedule_prep(): already scheduled
  n->sched = true;
  if (n->thread) {
    try_to_wake_up(rq->k, n->thread, 0);
    return;
  }
  rq->k->net->sd[static_cast<size_t>(rq->cpu)].poll_list.push_back(n);
  raise_softirq_irqoff(rq, NET_RX_SOFTIRQ, 0);
}

// napi_threaded_poll(): sleep until scheduled; then poll once with the weight under
// local_bh_disable() (whose local_bh_enable() runs whatever else is pending on this CPU), and
// cond_resched(). A poll below the weight completed the instance: the next round sleeps.
void napi_threaded_fn(rq* rq, task_struct* p) {
  napi_struct* n = napi_of_thread(rq->k, p);
  if (!n->sched) {
    p->__state = TASK_INTERRUPTIBLE;
    schedule(rq, /*preempt=*/false);
  } else {
    local_bh_disable(rq);
    sim::Time cost = 0;
    nic_poll(rq, n, n->weight, kernel_clock(rq, rq->k->now()), NET_RX_IN_NAPI_THREAD, &cost);
    cpu_charge(rq, cost);
    local_bh_enable(rq);
  }
  exit_to_user_mode_loop(rq, /*from_irq=*/false);  // cond_resched()
  cpu_return_to_user(rq);
}

}  // namespace kernel
