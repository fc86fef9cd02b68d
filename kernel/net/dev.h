// NAPI and NET_RX, mirroring net/core/dev.c (6.12 .. 7.0): ____napi_schedule(),
// net_rx_action() with netdev_budget and netdev_budget_usecs, __napi_poll() with weight 64 and
// repoll, napi_complete_done(), and threaded NAPI (napi_threaded_poll(), one napi/<dev>-<id>
// kthread per instance). Per-CPU state: net_state::sd (softnet_data).
#pragma once
#include <memory>
#include <vector>

#include "kernel/net.h"
#include "kernel/net/sock.h"
#include "kernel/sched/sched.h"

namespace kernel {

class KernelImpl;
struct KernelConfig;
struct net_device;

// NAPI_POLL_WEIGHT: the weight netif_napi_add() gives an instance (include/linux/netdevice.h).
inline constexpr int NAPI_POLL_WEIGHT = 64;


struct napi_struct {
  net_device* dev = nullptr;
  int napi_id = 0;
  int weight = NAPI_POLL_WEIGHT;
  // NAPI_STATE_SCHED: on a poll list or being polled; the device keeps its interrupt
  // masked until napi_complete_done() clears it.
  bool sched = false;
  task_struct* thread = nullptr;  // threaded NAPI: napi/<dev>-<id>
};

// Per-CPU softnet_data: the poll list and /proc/net/softnet_stat's counters.
struct softnet_data {
  std::vector<napi_struct*> poll_list;  // capacity reserved per device: no allocation per event
  std::vector<napi_struct*> list;       // net_rx_action()'s local list
  std::vector<napi_struct*> repoll;     // ... and its repoll list
  u64 processed = 0;
  u64 time_squeeze = 0;                 // passes ended by the budget or the time limit
};

struct net_state {
  std::vector<softnet_data> sd;  // per CPU
  std::vector<std::unique_ptr<net_device>> devs;
  std::vector<std::unique_ptr<udp_sock>> socks;  // bound UDP sockets (kernel/net/sock.cc)
};

// The kernel's network state, created on first use (net_dev_init(): softnet_data per CPU,
// open_softirq(NET_RX_SOFTIRQ, net_rx_action)).
net_state* net_state_of(KernelImpl* k);
// usecs_to_jiffies(netdev_budget_usecs), the default being 2 * USEC_PER_SEC / HZ.
u64 netdev_budget_jiffies(const KernelConfig& cfg);
// napi_schedule() -> ____napi_schedule() on rq's CPU (interrupts off).
void napi_schedule(rq* rq, napi_struct* n);
// Reserves room on every CPU's poll list for one more NAPI instance (at set-up).
void netdev_reserve_poll_lists(KernelImpl* k);
// The thread function of a threaded NAPI instance (napi_threaded_poll()).
void napi_threaded_fn(rq* rq, task_struct* p);

}  // namespace kernel
