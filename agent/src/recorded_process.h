// Which process tleak records under `tleak run --record NAME -- COMMAND`: not the command's own
// (a wrapper script, a launcher), but the first process it starts, itself or through others, that
// runs NAME. That process claims the recording in the control page; the images it execs keep its
// pid, and so the recording. The others run unrecorded and say so (other_processes.h).
#pragma once

#include "tleak/agent/protocol.h"

namespace tleak::agent {

enum class RecordClaim {
  kRecorded,       // this process is the one recorded
  kOther,          // another process is, or will be
  kNoDescriptors,  // this process runs NAME, unclaimed, but without tleak's stream (`stream_fd`)
};

// At start-up (system calls only, no allocation). `executable` is /proc/self/exe's target.
RecordClaim claim_recording(ControlPage* control, const char* name, int stream_fd, const char* executable);

}  // namespace tleak::agent
