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
  kNoDescriptors,  // this process runs NAME, unclaimed, but could reach tleak's stream by no way
};

struct RecordDecision {
  RecordClaim claim = RecordClaim::kOther;
  // kRecorded: the stream to adopt (channel_open): the inherited `stream_fd`, or a connection to
  // tleak's listener (`connected`: a descriptor of the agent's own, to close once adopted).
  int stream = -1;
  bool connected = false;
  // This process claimed the recording just now (not an image of one that had claimed it before):
  // a start that fails gives the claim back, for the next process that may start.
  bool claimed = false;
};

// At start-up (system calls only, no allocation). `stream_fd` is the inherited descriptor's number
// (-1: none given), `stream_name` the listener tleak offers a process that lost it (or null), and
// `executable` /proc/self/exe's target.
RecordDecision claim_recording(ControlPage* control, const char* name, int stream_fd, const char* stream_name,
                               const char* executable);

// Whether the process runs `name`: its executable's file name (python3.11), the one its command
// line starts with (python3, as a script or a shell named it), or for a Python process the script's
// file name or the module -m names (train.py). Once, at start-up (it reads /proc/self/cmdline).
bool runs_program(const char* name, const char* executable);

// How tleak's notes name this process among those it did not record: for a Python process the
// script or module it runs (train.py, multiprocessing.spawn: what --record takes), else
// `executable`. Once, at start-up, as runs_program.
const char* program_name(const char* executable);

// --record-fork, in a copy of the command's process at its first allocation (system calls only):
// the recording is this process's if no other copy claimed it first, through the descriptor the
// copy inherited or a connection to tleak's listener (`stream_name`, or null).
RecordDecision claim_forked_copy(ControlPage* control, int stream_fd, const char* stream_name);

}  // namespace tleak::agent
