// tleak's last step: its memory is freed by a process that outlives it by a moment, not by tleak's
// own exit, which whoever started tleak waits for. The kernel frees a process's pages as it exits,
// before its parent sees the exit: after a run of the PyTorch loop tleak held about 270 MB, whose
// freeing took about 20 ms between the report and the shell's prompt (strace: exit_group to exit).
#pragma once

namespace tleak::cli {

// Starts a task that shares tleak's memory (clone with CLONE_VM, nothing else shared: it closes
// every descriptor it was given but one, so no pipe or terminal of tleak's stays open through it)
// and waits, on that one, for tleak to be gone; the last to let go of the memory frees it, which is
// then that task, after tleak's parent has seen tleak exit. Call right before exiting, once every
// output is written. Under Valgrind (which cannot run such a task) or if the task cannot start:
// nothing, and tleak frees its memory as before.
void hand_memory_to_releaser();

}  // namespace tleak::cli
