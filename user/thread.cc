// Driving a program: resume its innermost coroutine until it awaits the next action.
#include "user/thread.h"

namespace user {

const kernel::UserAction& Thread::resume(int64_t ret, int64_t now, int cpu) {
  ret_ = ret;
  now_ = now;
  cpu_ = cpu;
  pending_.kind = kernel::UserAction::Exit;  // unless the program awaits something
  ++verbs_;  // an Action made before this step can no longer be awaited (asserted)
  if (!program_.done()) current_.resume();
  if (program_.done()) pending_.kind = kernel::UserAction::Exit;
  return pending_;
}

}  // namespace user
