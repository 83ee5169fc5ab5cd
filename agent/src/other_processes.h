// The processes the program starts are not recorded (README, "fork"); they say that they exist,
// through the control page (tleak/agent/protocol.h), so that a report of a wrapper script that
// did its work in a child does not read as if nothing had happened.
#pragma once

#include "tleak/agent/protocol.h"

namespace tleak::agent {

// In a child just forked from the recorded process (system calls only: it runs after fork).
void note_forked_child(ControlPage* control);

// At the start of a process that is not the recorded one but inherited the agent: a child that
// exec'd, a process it started, or under --record any process but the one recorded. `control` is
// the control page (find_control_page), or null (nothing is noted); `executable` the process's
// (/proc/self/exe's target, which agent_start read); `kind`: kExecd, or kNoDescriptors for a process
// that runs --record's NAME but could not reach tleak.
void note_other_process(ControlPage* control, const char* executable, ControlPage::OtherKind kind);

}  // namespace tleak::agent
