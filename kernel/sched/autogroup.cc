// Autogroup (kernel/sched/autogroup.c, CONFIG_SCHED_AUTOGROUP): every session (setsid())
// gets a task group of its own below the root, so that CPU is shared between sessions first
// and between their tasks second. A task is placed in its session's autogroup only while it
// would otherwise be in the root group (task_wants_autogroup()) and while
// kernel.sched_autogroup_enabled is set; kernel threads stay in the root group (kthreadd's
// session is init's, whose autogroup is the root group itself, autogroup_default). The
// autogroup's nice (/proc/<pid>/autogroup) sets its shares as a task's nice sets its weight
// (proc_sched_autogroup_set_nice()).
//
// Sessions here: the scenario's threads are in session 0 (the shell it was started from,
// with an autogroup of its own as a login shell's), unless a workload is started in a new
// session (KernelImpl::setsid()). Tasks join their group when they are created; a running task
// is not moved (no setsid() from a running program).
#include "kernel/kernel_impl.h"
#include "kernel/sched/sched.h"

namespace kernel {

int KernelImpl::setsid() {
  current_session_ = ++last_session_;
  return current_session_;
}

int KernelImpl::session_of(int tgid) const {
  for (const auto& [id, sid] : process_sessions_)
    if (id == tgid) return sid;
  return 0;
}

// autogroup_create(): the session's group, on first use.
int KernelImpl::autogroup_of_session(int sid) {
  for (const auto& [s, id] : autogroups_)
    if (s == sid) return id;
  const int id = create_task_group("/autogroup-" + std::to_string(sid));
  autogroups_.emplace_back(sid, id);
  return id;
}

// autogroup_task_group(): the group a task of `tgid` runs in when nothing else placed it.
task_group* KernelImpl::autogroup_task_group(int tgid) {
  if (!cfg_.sched_autogroup_enabled) return nullptr;
  const int sid = session_of(tgid);
  if (sid < 0) return nullptr;  // kernel threads: init's session, the root group
  return task_groups[static_cast<size_t>(autogroup_of_session(sid) - 1)].get();
}

void KernelImpl::set_autogroup_nice(int sid, int nice) {
  set_task_group_shares(autogroup_of_session(sid), nice_to_weight(nice));
}

}  // namespace kernel
