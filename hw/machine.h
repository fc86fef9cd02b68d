// A simulated machine: CPU topology (SMT siblings, LLC, socket) and the cost table the
// kernel model charges for hardware and entry/exit operations. Loaded from machines/*.toml
// (built in), from a TOML file path, or read from /sys of the running host ("host").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/time.h"

namespace hw {

// Every cost in nanoseconds of CPU time (or latency, where named so). Each value in the
// TOML files carries its source or is marked as an estimate.
struct Costs {
  sim::Time context_switch_ns = 1500;    // __schedule() to first user instruction, thread->thread
  sim::Time syscall_entry_ns = 100;      // user -> kernel
  sim::Time syscall_exit_ns = 100;       // kernel -> user
  sim::Time irq_entry_ns = 300;          // interrupt entry, incl. the vector dispatch
  sim::Time irq_exit_ns = 300;           // interrupt exit path up to the exit-to-user work loop
  sim::Time tick_handler_ns = 1000;      // update_process_times() + sched_tick() body
  sim::Time ipi_latency_ns = 1000;       // send -> handler entry on the target (latency)
  sim::Time ipi_send_ns = 300;           // CPU time the sender spends sending
  sim::Time hrtimer_program_ns = 100;    // programming the local timer (TSC deadline)
  sim::Time ttwu_ns = 400;               // try_to_wake_up() body on the waker
  sim::Time line_smt_ns = 5;             // cache-line transfer between SMT siblings
  sim::Time line_llc_ns = 16;            // ... within one LLC
  sim::Time line_xllc_ns = 70;           // ... across LLCs of one socket
  sim::Time line_xsocket_ns = 200;       // ... across sockets
  sim::Time copy_from_user_word_ns = 10; // STAC/CLAC + a checked load, L1 hit
  sim::Time idle_exit_ns = 2000;         // leaving the idle state for an interrupt (latency)
  sim::Time newidle_balance_ns = 3000;   // cost of one balance pass (newly idle or periodic)
  // task_mm_cid_work(): per possible CPU visited, both passes (old slots, then cids above
  // the weight): that CPU's rq->clock and rq->curr and the mm's slot, remote lines.
  sim::Time mm_cid_scan_cpu_ns = 200;
  // Networking (kernel/net/): a NIC receive interrupt's handler (ack, napi_schedule()); one
  // received packet's NET_RX work, driver poll to the socket enqueue (napi_poll() per packet);
  // the kernel path of one small UDP sendto(), udp_sendmsg() to the driver's xmit; the
  // kernel path of one UDP recvmsg() that finds a datagram, without the copy to user, and
  // the copy (skb_copy_datagram_msg()) in picoseconds per byte.
  sim::Time net_rx_irq_ns = 1000;
  sim::Time net_rx_packet_ns = 500;
  sim::Time udp_sendto_ns = 1500;
  sim::Time udp_recvmsg_ns = 1000;
  int copy_to_user_ps_per_byte = 100;
  // How long a parent takes to create one thread (pthread_create(): clone() and the stack):
  // threads a workload starts at the same time are forked this far apart (Kernel::create_thread).
  sim::Time clone_ns = 0;
  // A timer interrupt's handler starts uniform(0, this) after the timer's expiry: the spread
  // of the local timer's delivery (instruction boundary, cache misses, interrupts-off sections,
  // a hypervisor). 0 = exact timers (also for a profile without the key).
  sim::Time timer_irq_jitter_ns = 0;
  // Background activity: the rest of the system (kernel workers, daemons) wakes on each CPU
  // this often (per second, Poisson) and runs background_run_ns each time. 0 = a machine that
  // runs nothing but the scenario (also for a profile without the key).
  int background_wakeups_per_s = 0;
  sim::Time background_run_ns = 0;
  int smt_slowdown_permille = 1250;      // user work runs this much slower while the sibling is busy
  bool idle_polling = false;             // idle loop polls TIF_NEED_RESCHED (no wakeup IPI needed)
  // A cpuidle driver with the menu governor (bare metal); false: none (a KVM guest idling
  // with HLT), default_idle_call(). Decides when an idle CPU stops its tick.
  bool cpuidle_menu = false;
  // A deeper idle state of the cpuidle driver than the one idle_exit_ns and idle_polling
  // describe (acpi_idle's I/O-port C2 on Zen; intel_idle's MWAIT states poll, so they are
  // not of this kind): its exit latency and target residency (0: twice the exit latency,
  // acpi_idle's rule). menu picks it for idles it predicts at least that long; it does not
  // poll. 0 = none; only with cpuidle_menu.
  sim::Time idle_deep_exit_ns = 0;
  sim::Time idle_deep_residency_ns = 0;
  // The shallow and deep states' target residencies (the shallow state's: twice its exit).
  sim::Time idle_shallow_residency() const { return 2 * idle_exit_ns; }
  sim::Time idle_deep_residency() const {
    return idle_deep_residency_ns > 0 ? idle_deep_residency_ns : 2 * idle_deep_exit_ns;
  }
  bool has_deep_idle() const { return cpuidle_menu && idle_deep_exit_ns > 0; }
  // The cpuidle-haltpoll driver and haltpoll governor of a KVM guest whose host hints
  // KVM_HINTS_REALTIME: an idle vCPU polls TIF_NEED_RESCHED for a window that grows after
  // short halts and shrinks after long ones, then halts (idle_exit_ns, idle_polling: the
  // halt). Excludes cpuidle_menu.
  bool cpuidle_haltpoll = false;

  // The cost of one cache-line transfer over a line_distance() (0 for the same CPU).
  sim::Time line_ns(int distance) const {
    const sim::Time by_distance[] = {0, line_smt_ns, line_llc_ns, line_xllc_ns, line_xsocket_ns};
    return by_distance[distance];
  }
};

// Where a CPU sits: its core, LLC and socket (dense ids).
struct CpuPlace {
  int core, llc, socket;
};
// How far a cache line travels from CPU a (at x) to CPU b (at y): 0 the same CPU, 1 SMT
// siblings, 2 the same LLC, 3 the same socket, 4 another socket.
constexpr int kLineDistances = 5;
inline int line_distance(int a, int b, const CpuPlace& x, const CpuPlace& y) {
  return a == b ? 0 : x.core == y.core ? 1 : x.llc == y.llc ? 2 : x.socket == y.socket ? 3 : 4;
}

struct Topology {
  int nr_cpus = 0;
  // Per CPU, dense ids: the core, the LLC (cache domain) and the socket it belongs to.
  std::vector<int> core_of;
  std::vector<int> llc_of;
  std::vector<int> socket_of;
  int nr_cores() const;
  int nr_llcs() const;
  int nr_sockets() const;
  // The other hardware thread of cpu's core, or -1 (no SMT).
  int smt_sibling(int cpu) const;
  CpuPlace place(int cpu) const { return {core_of[cpu], llc_of[cpu], socket_of[cpu]}; }
};

struct Machine {
  std::string name;
  std::string description;
  Topology topo;
  Costs costs;
  // Time of the extend-sched2 critical section: 3,000,000 iterations of an empty `for` loop
  // compiled at -O0 on this machine (scripts/measure-cs-loop; docs/machines.md).
  sim::Time cs_loop_3m_ns = 3000000;

  // Latency of moving one cache line from cpu a to cpu b.
  sim::Time line_transfer_ns(int a, int b) const;
};

// Result of loading: empty error means success. The error names the bad parameter.
struct LoadResult {
  std::string error;
  bool ok() const { return error.empty(); }
};

// `name_or_path`: a built-in profile name ("genoa", "vm50", "small4", "host"), a generated
// machine ("synth:..."; see synth_machine()) or a path to a TOML file. On failure returns the error and leaves *out unspecified.
LoadResult load_machine(const std::string& name_or_path, Machine* out);
// A generated machine, "synth:SOCKETSxCORESxSMT[:llc=CORES]" (e.g. synth:16x256x2 for 8192
// CPUs): SOCKETS sockets of CORES cores with SMT (1 or 2) threads each, LLCs of CORES cores
// (default 8, or all of a socket's if it has fewer), SMT siblings numbered i and i + nr_cpus/2
// as Linux numbers AMD and Intel servers; genoa's costs. load_machine() takes these names.
LoadResult synth_machine(const std::string& name, Machine* out);
// Parses a machine profile from TOML text (`origin` names it in errors).
LoadResult parse_machine_toml(const std::string& text, const std::string& origin, Machine* out);
// Reads the topology of the running host from <sys_root>/devices/system/cpu: `sys_root` is
// "/sys", or a fake tree of the same layout in tests. Costs come from machines/host.toml.
LoadResult read_host_machine(const std::string& sys_root, Machine* out);
// Keeps only the first n CPUs (--cpus). REQUIRES 1 <= n <= nr_cpus.
LoadResult restrict_cpus(Machine* m, int n);
// Sets one cost by its TOML key (`context_switch_ns`, ..., `smt_slowdown_permille`) from
// text, as `--set machine.KEY=VALUE` does; the error names the key. Same bounds as the file.
LoadResult set_cost(Machine* m, const std::string& key, const std::string& value);
// The machine costs, declared once: every key of a profile's [costs] table (and of
// `--set machine.KEY`), with its type, bounds, default (that of Costs) and help. The TOML
// reader, `schedlab list costs` and docs/machines.md's table (`schedlab list costs
// --markdown`) come from this list.
enum class CostType { Ns, Int, Bool };
struct CostSetting {
  const char* key;
  CostType type;
  int64_t lo, hi;  // Ns, Int
  const char* help;
  int64_t (*get)(const Costs&);
  void (*set)(Costs*, int64_t);
};
const std::vector<CostSetting>& cost_settings();
std::string costs_text();      // `schedlab list costs`
std::string costs_markdown();  // the cost table of docs/machines.md
// Names of the built-in profiles, for `schedlab list`.
std::vector<std::string> builtin_machines();

}  // namespace hw
