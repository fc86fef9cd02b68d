// The parent that forks a scenario's threads (kernel/fork.c's side of it): the launcher, a
// task of its own process that runs `for (...) pthread_create(); pthread_join();`, and
// clone(), which costs it machine().costs.clone_ns and hands the child to
// wake_up_new_task() from the launcher's CPU. Being a task, the launcher takes CPU time
// where it runs, can be preempted by its children, and leaves its load and utilisation on
// that CPU when it sleeps, as a real launcher does.

#include <cassert>

#include "kernel/cpu_exec.h"
#include "kernel/kernel_impl.h"
#include "kernel/syscalls.h"
#include "kernel/time/hrtimer.h"
#include "kernel/trace_points.h"

namespace kernel {

// The draw of launcher_cpu=random: a stream of its own, so the choice moves no other draw.
constexpr uint64_t kLauncherCpuStream = 0x7368656c6cull << 24;  // "shell"

void register_fork_syscalls();  // called by the syscall table's registrar

namespace {

// The launcher's program: each pending fork at its start time (clock_nanosleep until then),
// in creation order; then it waits in pthread_join() for good. A kernel-side UserContext
// (user/ has the coroutine programs) so that every KernelImpl forks its threads the same way,
// with or without the scenario layer.
class LauncherProgram final : public UserContext {
 public:
  explicit LauncherProgram(const KernelImpl* k) : k_(k) {}
  const UserAction& resume(int64_t, int64_t now, int) override {
    UserAction& a = action_;
    a = UserAction{};
    a.kind = UserAction::Syscall;
    if (next_ < k_->pending_forks.size()) {
      const sim::Time start = k_->pending_forks[next_].start;
      if (start > now) {
        a.nr = NR_clock_nanosleep;
        a.arg[0] = 1;  // TIMER_ABSTIME
        a.arg[1] = start;
        return a;
      }
      a.nr = NR_clone;
      a.arg[0] = static_cast<int64_t>(next_++);
      return a;
    }
    a.nr = NR_futex;  // pthread_join(): nobody ever wakes it
    a.word = &join_;
    a.arg[0] = FUTEX_WAIT;
    a.arg[1] = 0;
    return a;
  }

 private:
  const KernelImpl* k_;
  size_t next_ = 0;
  UserWord join_;
  UserAction action_;
};

// clone(CLONE_VM | CLONE_THREAD ...) of pending fork arg[0]: copy_process() is the cost;
// sched_fork() puts the child on the parent's CPU, and wake_up_new_task() places it from
// there. The child is woken at the syscall's entry rather than at the end of its cost (a
// difference of at most clone_ns in when it starts). A child with an RT policy is placed
// as the fair task it is at the fork: glibc's pthread_create() with explicit scheduling
// attributes clones it with the parent's policy and sets its own while it waits
// (stopped_start), and a thread that sets its policy itself starts fair too; it then runs
// as RT from the CPU it was placed on (its first RT wakeup is not modelled).
int64_t sys_clone(rq* rq, task_struct* parent, const UserAction& a) {
  KernelImpl* k = rq->k;
  if (parent != k->launcher() || a.arg[0] < 0 ||
      static_cast<size_t>(a.arg[0]) >= k->pending_forks.size())
    return -EINVAL;
  task_struct* child = k->pending_forks[static_cast<size_t>(a.arg[0])].p;
  cpu_charge(rq, k->machine_.costs.clone_ns);
  __set_task_cpu(child, rq->cpu);
  trace_sched_process_fork(rq, parent, child);
  wake_up_new_task(k, child, /*as_fair_child=*/true);
  return child->pid;
}

}  // namespace

void register_fork_syscalls() { register_syscall(NR_clone, sys_clone); }

void KernelImpl::queue_fork(task_struct* p, sim::Time start) {
  if (!launcher_) {
    const int tgid = create_process("launcher");
    TaskAttr attr;
    attr.comm = "launcher";
    TaskArena::Ptr l = alloc_task(tgid, attr);
    auto prog = std::make_unique<LauncherProgram>(this);
    prog->pid = l->pid;
    l->user = prog.get();
    launcher_ = l.get();
    // The shell forks it from the CPU it runs on; wake_up_new_task() places it from there.
    int shell_cpu = cfg_.launcher_cpu;
    if (shell_cpu == KernelConfig::kLauncherCpuRandom)
      shell_cpu = static_cast<int>(sim::Rng(cfg_.seed, kLauncherCpuStream).uniform_int(0, nr_cpus() - 1));
    __set_task_cpu(launcher_, shell_cpu);
    launcher_start_.fn = fork_from_outside;  // by the shell
    launcher_start_.ctx = launcher_;
    engine_->arm(&launcher_start_, engine_->now());
    launcher_wake_.fn = hrtimer_sleep_fn;  // an interrupt on its CPU that wakes it
    launcher_wake_.ctx = launcher_;
    programs_.push_back(std::move(prog));
    tasks_.push_back(std::move(l));
  }
  pending_forks.push_back({p, start});
  if (UserWord* w = launcher_->futex_word) {  // waiting in pthread_join(), alone on its word
    assert(w->futex_head == launcher_ && w->futex_tail == launcher_);
    w->futex_head = w->futex_tail = nullptr;
    launcher_->futex_word = nullptr;
    launcher_wake_.arg = static_cast<uint32_t>(launcher_->cpu);
    engine_->arm(&launcher_wake_, engine_->now());
  }
}

}  // namespace kernel
