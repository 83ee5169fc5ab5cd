// The processes the program starts are not recorded (README, "fork"); they say that they exist,
// through the control page (tleak/agent/protocol.h), so that a report of a wrapper script that
// did its work in a child does not read as if nothing had happened.
#pragma once

#include "tleak/agent/protocol.h"

namespace tleak::agent {

// In a child just forked from the recorded process (system calls only: it runs after fork).
void note_forked_child(ControlPage* control);

// At the start of a process that is not the recorded one but inherited the agent: a child that
// exec'd (or a process it started). Finds the control page through the descriptor it inherited
// (`control_fd`, -1 if none) or, if the child closed it, through tleak's (`control_path`, or
// null). Maps a page only if it is a control page: a program may have reused the number.
void note_other_process(int control_fd, const char* control_path);

}  // namespace tleak::agent
