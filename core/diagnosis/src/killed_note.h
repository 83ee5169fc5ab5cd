// The note for a program killed by a signal with no exit scan: which signal, why no scan came
// (the agent judges a process killed by SIGINT, SIGTERM, SIGHUP or SIGPIPE left to their default
// action, and one that signals itself once it has cleaned up; not SIGKILL, a crash, nor the
// others), and what would have it judged.
#pragma once

#include <string>

namespace tleak::diagnosis {

// "no exit scan: the program was killed by signal 9 (SIGKILL) before its exit handlers ran (...)".
std::string killed_without_scan_note(int signal);

}  // namespace tleak::diagnosis
