// The control page tleak shares with its agents (tleak/agent/protocol.h, ControlPage), mapped from
// a descriptor whose number came through the environment.
#pragma once

#include "tleak/agent/protocol.h"

namespace tleak::agent {

// The page behind `fd` if it is a control page (a memory file of one page that starts with the
// protocol's magic), else null: a program may have put a file of its own under that number, and
// a shorter one would fault when read. Unmap with munmap(page, 4096).
ControlPage* map_control_page(int fd);
// The control page a process the program started can reach: through the descriptor it inherited
// (`control_fd`, -1 if none) or, if it was closed, through tleak's (`control_path`, /proc/PID/fd/N,
// or null). Null if neither is a control page.
ControlPage* find_control_page(int control_fd, const char* control_path);

}  // namespace tleak::agent
