// udp-flood: the experiment of the latency_sensi_flag patch (fuyuanli, May 2024). Remote
// clients flood UDP to one server whose flows' interrupts are all bound to one CPU (flow
// director), so NET_RX is always pending there; a test program bound to that CPU loops on
// sendto(), whose transmit path leaves a BH-disabled section through local_bh_enable().
// Optional on that CPU: a second sender and a CPU hog; each sender with or without the flag.
// Optional: the UDP server's receiving threads, reading the flows' socket with recvmsg() (on
// the flooded CPU, on another, or anywhere); and, instead of calling sendto() itself, the test
// program handing its messages to a separate sending thread (a bounded queue and futex
// wake-ups), the alternative the patch's review suggested.
// Reports the share of the sender's run time spent in softirq work inside local_bh_enable()
// (what perf showed in the patch), sendto() rate and latency, where NET_RX ran and what it
// cost, packets received and dropped and their receive latency, ksoftirqd's runqueue wait,
// and with a server: datagrams the application received, socket drops, the latency from the
// NIC to recvmsg()'s return, and the server's CPU time.
#include <cmath>

#include "kernel/kernel.h"
#include "kernel/stats.h"
#include "sim/stats.h"
#include "workloads/common.h"

namespace workloads {

namespace {

// The counters of task `pid` in the snapshot (an empty record if there is none).
const kernel::TaskStats& task_of(const kernel::KernelStats& ks, int pid) {
  static const kernel::TaskStats none;
  for (const kernel::TaskStats& t : ks.tasks)
    if (t.pid == pid) return t;
  return none;
}

struct Sender {
  int pid = 0;
  int64_t think = 0;
  int64_t kernel_ns = 0;
  uint64_t calls = 0;
  sim::Histogram latency;
};

user::Program sender_program(user::Thread& t, Sender* s) {
  for (;;) {
    const int64_t before = t.now();
    co_await t.sendto(64, s->kernel_ns);
    s->latency.add(t.now() - before);
    s->calls++;
    if (s->think > 0) co_await t.compute(s->think);
  }
}

// The hand-off between the test program and its sending thread: messages queued, at most
// kHandoffCap. The producer sleeps on the word while it is full and is woken when the
// sending thread has taken half; the sending thread sleeps while it is empty and is woken by
// the message that makes it non-empty.
constexpr int64_t kHandoffCap = 64;
struct Handoff {
  user::UserWord queued;
};

// The test program, handing its messages off: `think` of its own work per message (its
// calls count messages).
user::Program producer_program(user::Thread& t, Sender* s, Handoff* h) {
  for (;;) {
    if (s->think > 0) co_await t.compute(s->think);
    while (t.load(&h->queued) >= kHandoffCap) co_await t.futex_wait(&h->queued, kHandoffCap);
    const int64_t was = t.fetch_add(&h->queued, 1);
    s->calls++;
    if (was == 0) co_await t.futex_wake(&h->queued, 1);
  }
}

// The sending thread: one sendto() per queued message.
user::Program send_thread_program(user::Thread& t, Sender* s, Handoff* h) {
  for (;;) {
    while (t.load(&h->queued) == 0) co_await t.futex_wait(&h->queued, 0);
    const int64_t before = t.now();
    co_await t.sendto(64, s->kernel_ns);
    s->latency.add(t.now() - before);
    s->calls++;
    const int64_t was = t.fetch_add(&h->queued, -1);
    if (was == kHandoffCap / 2 + 1) co_await t.futex_wake(&h->queued, 1);
  }
}

// A receiving server thread: recvmsg() a datagram, then `work` of user time on it.
struct Server {
  int sock = 0;
  int64_t work = 0;
  uint64_t received = 0;
  sim::Histogram latency;  // NIC arrival (the hardware receive timestamp) to recvmsg()'s return
  std::vector<int> pids;
};

user::Program server_program(user::Thread& t, Server* s) {
  for (;;) {
    int64_t rx_ts = 0;
    const int64_t n = co_await t.recvmsg(s->sock, 1500, &rx_ts);
    if (n >= 0) {
      s->latency.add(t.now() - rx_ts);
      s->received++;
    }
    if (s->work > 0) co_await t.compute(s->work);
  }
}

// `where` names a placement: the flooded CPU, another one, or none (any CPU). The CPU list
// to pin to, or an error naming `param`.
std::string placement(const std::string& param, const std::string& where, int cpu, int nr_cpus,
                      std::vector<int>* cpus) {
  if (where == "same") {
    *cpus = {cpu};
  } else if (where == "other") {
    if (nr_cpus < 2) return param + ": 'other' needs a second CPU (the machine has 1)";
    *cpus = {(cpu + 1) % nr_cpus};
  } else if (where == "any") {
    cpus->clear();
  } else {
    return "";
  }
  return "";
}

// `flows`: a count N (N flows sharing `rate`, bursts of `burst`), or flows separated by ';',
// each "rate:<pps>" with an optional "/burst:<packets>".
std::string parse_flows(const std::string& spec, double rate, int burst, std::vector<kernel::NetFlowAttr>* out) {
  long long n = 0;
  if (kernel::parse_int(spec, &n)) {
    if (n < 1 || n > 4096) return "flows: must be 1..4096 or a list of flows (got '" + spec + "')";
    for (long long i = 0; i < n; ++i) out->push_back({rate / static_cast<double>(n), burst});
    return "";
  }
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(';', start);
    if (end == std::string::npos) end = spec.size();
    const std::string flow = spec.substr(start, end - start);
    kernel::NetFlowAttr f{-1, 1};
    size_t s = 0;
    while (s <= flow.size()) {
      size_t e = flow.find('/', s);
      if (e == std::string::npos) e = flow.size();
      const std::string kv = flow.substr(s, e - s);
      const size_t colon = kv.find(':');
      const std::string key = kv.substr(0, colon);
      const std::string val = colon == std::string::npos ? "" : kv.substr(colon + 1);
      char* endp = nullptr;
      const double v = std::strtod(val.c_str(), &endp);
      const bool num = !val.empty() && *endp == '\0' && std::isfinite(v);
      if (key == "rate") {
        if (!num || v < 0 || v > 1e9)
          return "flows: rate must be 0..1e9 packets/s (got '" + val + "' in '" + flow + "')";
        f.rate_pps = v;
      } else if (key == "burst") {
        if (!num || v < 1 || v > 65536 || v != std::floor(v))
          return "flows: burst must be an integer in 1..65536 (got '" + val + "' in '" + flow + "')";
        f.burst = static_cast<int>(v);
      } else {
        return "flows: unknown flow parameter '" + key + "' in '" + flow + "' (rate, burst)";
      }
      s = e + 1;
    }
    if (f.rate_pps < 0) return "flows: a flow needs rate:<pps> (got '" + flow + "')";
    out->push_back(f);
    start = end + 1;
  }
  return "";
}

class UdpFlood : public Workload {
 public:
  std::string setup(kernel::Kernel& k, const Params& p, uint64_t seed) override {
    cpu_ = p.get_int_in("cpu", 0, k.nr_cpus() - 1);
    const int ring = p.get_int_in("ring", 0, 1048576);
    const int burst = p.get_int_in("burst", 1, 65536);
    const int64_t think = p.get_ns("think");
    const int64_t rx_usecs = p.get_ns("rx_usecs");
    const bool first = p.get_bool("sender");
    const bool flag = p.get_bool("sender_flag");
    const bool second = p.get_bool("second_sender");
    const bool second_flag = p.get_bool("second_sender_flag");
    const bool hog = p.get_bool("hog");
    const int server_threads = p.get_int_in("server_threads", 1, 64);
    const int rcvbuf = p.get_int_in("server_rcvbuf", 1, 1 << 28);
    const int64_t server_work = p.get_ns("server_work");
    if (!p.error().empty()) return p.error();
    const std::string server = p.get("server");
    const std::string send_via = p.get("send_via");
    if (server != "none" && server != "same" && server != "other" && server != "any")
      return "server: must be none, same, other or any (got '" + server + "')";
    if (send_via != "self" && send_via != "same" && send_via != "other")
      return "send_via: must be self, same or other (got '" + send_via + "')";
    if (server == "none" && server_threads != 1)
      return "server_threads: needs a server (server=same, other or any)";
    if (server_work < 0) return "server_work: must be >= 0 (got '" + p.get("server_work") + "')";
    std::vector<int> server_cpus, send_cpus;
    if (std::string e = placement("server", server, cpu_, k.nr_cpus(), &server_cpus); !e.empty()) return e;
    if (std::string e = placement("send_via", send_via, cpu_, k.nr_cpus(), &send_cpus); !e.empty()) return e;
    kernel::UdpSockAttr sock;
    sock.rcvbuf = rcvbuf;
    if (std::string e = k.validate_udp_socket(sock); !e.empty()) return "server_rcvbuf: " + e;
    char* end = nullptr;
    const std::string rate_s = p.get("rate");
    const double rate = std::strtod(rate_s.c_str(), &end);
    if (rate_s.empty() || *end != '\0' || !std::isfinite(rate) || rate < 0 || rate > 1e9)
      return "rate: must be a number of packets/s in 0..1e9 (got '" + rate_s + "')";
    if (ring < 1) return "ring: must be >= 1 descriptors (got " + std::to_string(ring) + ")";
    if (think < 0) return "think: must be >= 0 (got '" + p.get("think") + "')";
    if (second_flag && !second) return "second_sender_flag: needs second_sender=true";
    if (flag && !first) return "sender_flag: needs sender=true";
    if (!k.config().softirq.ksoftirqd)
      return "softirq.ksoftirqd: udp-flood needs the ksoftirqd threads (set softirq.ksoftirqd=true)";
    kernel::NicRxQueueAttr nic;
    nic.irq_cpu = cpu_;
    nic.ring_size = ring;
    nic.rx_usecs_ns = rx_usecs;
    if (std::string e = parse_flows(p.get("flows"), rate, burst, &nic.flows); !e.empty()) return e;
    if (std::string e = k.validate_netdev(nic); !e.empty()) return e;
    kernel::TaskAttr attr;
    attr.cpus = {cpu_};
    attr.latency_sensitive = flag;
    if (std::string e = k.validate_attr(attr); !e.empty()) return "sender_flag: " + e;
    attr.latency_sensitive = second_flag;
    if (std::string e = k.validate_attr(attr); !e.empty()) return "second_sender_flag: " + e;
    if (std::string e = spawn_background(k, seed); !e.empty()) return e;
    has_server_ = server != "none";
    if (has_server_) {  // the server's socket: every flow's datagrams go to it
      server_.sock = k.add_udp_socket(sock);
      server_.work = server_work;
      for (kernel::NetFlowAttr& f : nic.flows) f.sock = server_.sock;
    }
    dev_ = k.add_netdev(nic);
    const int tgid = k.create_process("udp-flood");
    handoff_ = send_via != "self";
    for (int i = 0; i < 2; ++i) {
      if (!(i == 0 ? first : second)) continue;
      Sender& s = senders_[i];
      s.think = think;
      s.kernel_ns = k.machine().costs.udp_sendto_ns;
      attr.comm = i == 0 ? "sender" : "sender2";
      attr.latency_sensitive = i == 0 ? flag : second_flag;
      auto th = std::make_unique<user::Thread>(&k, sim::Rng(seed, static_cast<uint64_t>(i)));
      if (i == 0 && handoff_)
        th->start(producer_program(*th, &s, &handoff_word_));
      else
        th->start(sender_program(*th, &s));
      s.pid = k.create_thread(tgid, attr, std::move(th));
    }
    if (handoff_ && first) {  // the test program's sending thread, unflagged
      Sender& s = senders_[2];
      s.kernel_ns = k.machine().costs.udp_sendto_ns;
      kernel::TaskAttr a;
      a.comm = "sendthread";
      a.cpus = send_cpus;
      auto th = std::make_unique<user::Thread>(&k, sim::Rng(seed, 2));
      th->start(send_thread_program(*th, &s, &handoff_word_));
      s.pid = k.create_thread(tgid, a, std::move(th));
    }
    if (has_server_) {
      const int stgid = k.create_process("udp-server");
      for (int i = 0; i < server_threads; ++i) {
        kernel::TaskAttr a;
        a.comm = "server" + std::to_string(i);
        a.cpus = server_cpus;
        auto th = std::make_unique<user::Thread>(&k, sim::Rng(seed, 200 + static_cast<uint64_t>(i)));
        th->start(server_program(*th, &server_));
        server_.pids.push_back(k.create_thread(stgid, a, std::move(th)));
      }
    }
    if (hog) {
      const int htgid = k.create_process("hog");
      kernel::TaskAttr h;
      h.comm = "hog";
      h.cpus = {cpu_};
      auto th = std::make_unique<user::Thread>(&k, sim::Rng(seed, 100));
      th->start(hog_program(*th));
      hog_pid_ = k.create_thread(htgid, h, std::move(th));
    }
    return "";
  }

  void report(const kernel::KernelStats& ks, sim::Time duration, report::Results* r) override {
    const double secs = static_cast<double>(duration) / 1e9;
    auto put = [&](const std::string& name, double v, const std::string& unit, const std::string& help) {
      r->metrics.push_back({name, v, unit, help});
    };
    for (int i = 0; i < 3; ++i) {
      const Sender& s = senders_[i];
      if (s.pid == 0) continue;
      const kernel::TaskStats& st = task_of(ks, s.pid);
      const std::string who = kSenderNames[i];
      const double run = static_cast<double>(st.run_ns);
      put(who + "_bh_softirq_share", run > 0 ? static_cast<double>(st.softirq_bh_ns) / run : 0, "share",
          "share of the " + who + "'s run time spent in softirq work inside its local_bh_enable()");
      put(who + "_softirq_share", run > 0 ? static_cast<double>(st.softirq_ns) / run : 0, "share",
          "share of its run time in softirq work of any kind (hardirq exits too)");
      put(who + "_cpu_seconds", run / 1e9, "s", "the " + who + "'s run time");
      if (i == 0)
        put("sender_messages_per_second", static_cast<double>(s.calls) / secs, "messages/s",
            handoff_ ? "messages the test program handed to its sending thread per second"
                     : "messages the test program sent per second (its sendto() calls)");
      if (i == 0 && handoff_) continue;  // it calls no sendto()
      put(who + "_sendto_per_second", static_cast<double>(s.calls) / secs, "calls/s",
          "sendto() calls the " + who + " completed per second");
      r->latencies.push_back(latency_summary(who + "_sendto", s.latency));
    }
    if (has_server_) report_server(ks, secs, r);
    if (hog_pid_ != 0) {
      const kernel::TaskStats& st = task_of(ks, hog_pid_);
      put("hog_cpu_seconds", static_cast<double>(st.run_ns) / 1e9, "s", "the hog's run time");
      put("hog_softirq_seconds", static_cast<double>(st.softirq_ns) / 1e9, "s",
          "softirq work run on top of the hog (its hardirq exits)");
    }
    const kernel::NetRxStats& nst = ks.netdevs[static_cast<size_t>(dev_)];
    double total = 0;
    for (int c = 0; c < kernel::NR_NET_RX_CTX; ++c) {
      const double v = static_cast<double>(nst.ns[static_cast<size_t>(c)]) / 1e9;
      total += v;
      put(std::string("net_rx_seconds_") + kernel::net_rx_ctx_name[c], v, "CPU-s",
          std::string("NET_RX work that ran ") + kNetRxWhere[c]);
    }
    put("net_rx_seconds_total", total, "CPU-s", "all NET_RX work, wherever it ran");
    put("packets_received_per_second", static_cast<double>(nst.packets_received) / secs, "packets/s",
        "packets polled off the ring");
    put("packets_dropped_per_second", static_cast<double>(nst.packets_dropped) / secs, "packets/s",
        "packets dropped because the ring was full");
    put("irqs_per_second", static_cast<double>(nst.irqs) / secs, "1/s", "receive interrupts raised");
    put("packets_drop_share",
        nst.packets_arrived ? static_cast<double>(nst.packets_dropped) / static_cast<double>(nst.packets_arrived) : 0,
        "share", "dropped / arrived");
    r->latencies.push_back(latency_summary("packet_receive", nst.latency));
    const kernel::CpuStats& cs = ks.cpus[static_cast<size_t>(cpu_)];
    const kernel::TaskStats& kt = task_of(ks, cs.ksoftirqd_pid);
    put("ksoftirqd_cpu_seconds", static_cast<double>(kt.run_ns) / 1e9, "s", "ksoftirqd's run time on the flooded CPU");
    put("ksoftirqd_wakeups_per_second", static_cast<double>(cs.nr_wakeup_softirqd) / secs, "1/s",
        "wakeup_softirqd() calls that woke it");
    put("ksoftirqd_wait_mean_us",
        kt.wait_count ? static_cast<double>(kt.wait_sum_ns) / static_cast<double>(kt.wait_count) / 1e3 : 0, "us",
        "ksoftirqd's mean runqueue wait per wakeup");
    put("ksoftirqd_wait_max_us", static_cast<double>(kt.wait_max_ns) / 1e3, "us", "its longest runqueue wait");
  }

 private:
  void report_server(const kernel::KernelStats& ks, double secs, report::Results* r) const {
    auto put = [&](const std::string& name, double v, const std::string& unit, const std::string& help) {
      r->metrics.push_back({name, v, unit, help});
    };
    const kernel::UdpSockStats& ss = ks.sockets[static_cast<size_t>(server_.sock)];
    double run = 0, bh = 0, sirq = 0;
    for (int pid : server_.pids) {
      const kernel::TaskStats& st = task_of(ks, pid);
      run += static_cast<double>(st.run_ns);
      bh += static_cast<double>(st.softirq_bh_ns);
      sirq += static_cast<double>(st.softirq_ns);
    }
    put("server_datagrams_per_second", static_cast<double>(server_.received) / secs, "datagrams/s",
        "datagrams the server's threads received with recvmsg() per second");
    put("socket_drops_per_second", static_cast<double>(ss.rcvbuf_errors) / secs, "datagrams/s",
        "datagrams the socket dropped because its receive buffer was full (UDP RcvbufErrors)");
    const double offered = static_cast<double>(ss.enqueued + ss.rcvbuf_errors);
    put("socket_drop_share", offered > 0 ? static_cast<double>(ss.rcvbuf_errors) / offered : 0, "share",
        "socket drops / datagrams NET_RX delivered to the socket");
    put("socket_queue_max", static_cast<double>(ss.queue_max), "datagrams", "the most datagrams queued on the socket");
    put("server_cpu_seconds", run / 1e9, "s", "the server threads' run time");
    put("server_softirq_seconds", sirq / 1e9, "s",
        "softirq work run on top of the server threads (hardirq exits and their local_bh_enable())");
    put("server_bh_softirq_share", run > 0 ? bh / run : 0, "share",
        "share of the server's run time spent in softirq work inside its recvmsg()'s local_bh_enable()");
    put("app_receive_p50_us", static_cast<double>(server_.latency.percentile(0.5)) / 1e3, "us",
        "median latency from a datagram's arrival at the NIC to the recvmsg() that returned it");
    put("app_receive_p99_us", static_cast<double>(server_.latency.percentile(0.99)) / 1e3, "us",
        "its 99th percentile");
    r->latencies.push_back(latency_summary("app_receive", server_.latency));
  }

  static constexpr const char* kSenderNames[3] = {"sender", "sender2", "sendthread"};
  static constexpr const char* kNetRxWhere[kernel::NR_NET_RX_CTX] = {
      "at hardirq exit", "inside a task's local_bh_enable()", "in ksoftirqd",
      "in the forced-threaded interrupt handler", "in the threaded NAPI kthread"};
  int cpu_ = 0;
  int dev_ = 0;
  int hog_pid_ = 0;
  Sender senders_[3];  // the test program, the second sender, the sending thread
  bool handoff_ = false;
  Handoff handoff_word_;
  bool has_server_ = false;
  Server server_;
};

}  // namespace

WorkloadInfo udp_flood_workload() {
  return {"udp-flood",
          "the latency_sensi_flag patch's test: a UDP flood's NET_RX on one CPU and a sendto() loop there",
          {{"cpu", "0", "the CPU of the flows' interrupts and of the senders"},
           {"rate", "300000", "flood packets/s over all flows"},
           {"flows", "4", "N flows sharing rate, or flows 'rate:<pps>[/burst:<n>];...'"},
           {"burst", "1", "packets per burst (bursts arrive as a Poisson process)"},
           {"ring", "1024", "RX ring descriptors; a full ring drops"},
           {"rx_usecs", "8us", "interrupt coalescing, ethtool -C rx-usecs (mlx5e's default 8 us; 0 = none)"},
           {"think", "0", "user time between two sendto() calls"},
           {"sender", "true", "the test program: a sendto() loop on the CPU"},
           {"sender_flag", "false", "the test program sets latency_sensi_flag (needs the patch)"},
           {"second_sender", "false", "a second sendto() loop on the CPU"},
           {"second_sender_flag", "false", "the second sender sets the flag"},
           {"hog", "false", "a CPU hog on the CPU"},
           {"send_via", "self",
            "self: the test program calls sendto(); same / other: it hands each message to a sending "
            "thread on the CPU / on another CPU"},
           {"server", "none",
            "the UDP server's receiving threads (recvmsg() on the flows' socket): none, same (the "
            "CPU), other (another CPU) or any (not pinned)"},
           {"server_threads", "1", "receiving threads, all on the one socket"},
           {"server_rcvbuf", "212992", "the socket's sk_rcvbuf in bytes (net.core.rmem_default)"},
           {"server_work", "0", "user time a receiving thread spends on each datagram"}},
          [] { return std::make_unique<UdpFlood>(); }};
}

}  // namespace workloads
