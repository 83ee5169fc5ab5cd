// The calls by which a program puts itself in a seccomp sandbox: prctl(PR_SET_SECCOMP, ...) and
// syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER or SECCOMP_SET_MODE_STRICT, ...) (libseccomp's
// seccomp_load makes one of the two). A filter may forbid the calls the agent makes to reach tleak
// (a sandbox that allows only what the program itself needs): a send under it would kill the
// program with SIGSYS. The interposed calls (interpose.cc) have the agent send what it recorded and
// stop recording first where the sandbox may do that (agent.h, stop_recording_for_sandbox), then
// pass the call on to these: the definitions the program would have called without tleak
// (dlsym(RTLD_NEXT)).
#pragma once

namespace tleak::agent {

// What entering seccomp by prctl(option, a2, a3, ...) or syscall(number, a1, a2, a3, ...) may do
// to the agent's own calls.
enum class SandboxEffect {
  kNone,  // no seccomp mode entered
  // A filter that can only make a call fail (each of its returns allows, logs or gives an error
  // number): the agent sends what it has and records on. Its calls fail as any may: a refused send
  // ends the recording with a note (ControlPage::kChannelRefused), a refused read of memory the exit
  // scan (tests/programs/roots_unreadable.c).
  kMayRefuse,
  // Strict mode, or a filter with another action among its returns (kill, trap, trace, a user
  // notification), or a computed one, or one that cannot be read: the agent stops recording first.
  kMayStop,
};
SandboxEffect prctl_sandbox_effect(long option, unsigned long a2, unsigned long a3);
SandboxEffect syscall_sandbox_effect(long number, long a1, long a2, long a3);

namespace real {

int prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5);
long syscall(long number, long a1, long a2, long a3, long a4, long a5, long a6);

}  // namespace real
}  // namespace tleak::agent
