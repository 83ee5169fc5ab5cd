#include "killed_note.h"

#include <signal.h>

#include "tleak/diagnosis/signal_name.h"

namespace tleak::diagnosis {
namespace {

std::string cause_of(int signal) {
  switch (signal) {
    case SIGKILL:
      return "SIGKILL, which no process can catch or be judged at: kill -9, the kernel's out-of-memory killer";
    case SIGSEGV:
    case SIGBUS:
    case SIGILL:
    case SIGFPE:
      return "a crash: a process whose memory may be corrupt is not scanned";
    case SIGABRT:
      return "an abort() the C library called itself, as a failed assert() does, or one a SIGABRT handler of the "
             "program's saw first, or a SIGABRT sent by another process or from a signal handler";
    case SIGINT:
    case SIGTERM:
    case SIGHUP:
    case SIGPIPE:
      return "one it sent itself from a signal handler, or one that came while the program had set its default "
             "action by a system call of its own, past the C library";
    default:
      return "a signal it did not catch, whose default action the agent does not stand in for: it does for SIGINT, "
             "SIGTERM, SIGHUP and SIGPIPE";
  }
}

}  // namespace

std::string killed_without_scan_note(int signal) {
  return "no exit scan: the program was killed by " + signal_number_and_name(signal) +
         " before its exit handlers ran (" + cause_of(signal) +
         "), so blocks left allocated are reported as unjudged, not as leaks; a program that ends by itself is "
         "judged, and so is one killed by SIGINT (Ctrl-C), SIGTERM, SIGHUP or SIGPIPE while it leaves them to their "
         "default action, and one that sends itself a signal once it has cleaned up (Python does after Ctrl-C)";
}

}  // namespace tleak::diagnosis
