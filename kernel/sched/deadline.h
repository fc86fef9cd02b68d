// The fair deadline server's entry points (deadline.cc): started and stopped by the fair
// class, charged by fair and idle time, picked by __pick_next_task() (struct dl_server in
// sched.h). Linux: kernel/sched/deadline.c's dl_server_*() functions.
#pragma once
#include "kernel/sched/sched.h"

namespace kernel {

void dl_server_start(rq* rq);           // the first fair task became runnable
void dl_server_stop(rq* rq);            // no fair task is runnable any more
void dl_server_update(rq* rq, s64 delta_exec);  // a fair task ran delta_exec ns
// Arms the server's timer while RT keeps queued fair tasks off the CPU, cancels it else.
void dl_server_update_defer(rq* rq);
void dl_server_pick_none(rq* rq);    // the queued server's fair pick found no task
void dl_server_update_idle_time(rq* rq, task_struct* p);  // 6.12, 6.18: idle time since p ran
void dl_server_update_idle(rq* rq, s64 delta_exec);        // 7.0: idle ran delta_exec ns
void dl_server_timer_fn(sim::Timer* t, sim::Time now);

}  // namespace kernel
