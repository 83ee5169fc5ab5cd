// The calls by which a program puts itself in a seccomp sandbox: prctl(PR_SET_SECCOMP, ...) and
// syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER or SECCOMP_SET_MODE_STRICT, ...) (libseccomp's
// seccomp_load makes one of the two). A filter may forbid the calls the agent makes to reach tleak
// (a sandbox that allows only what the program itself needs): a send under it would kill the
// program with SIGSYS, or fail. The interposed calls (interpose.cc) have the agent send what it
// recorded and stop recording first (agent.h, stop_recording_for_sandbox), then pass the call on
// to these: the definitions the program would have called without tleak (dlsym(RTLD_NEXT)).
#pragma once

namespace tleak::agent {

// Whether prctl(option, first, ...) or syscall(number, first, ...) puts the process in a
// seccomp mode.
bool prctl_enters_seccomp(long option);
bool syscall_enters_seccomp(long number, long first);

namespace real {

int prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5);
long syscall(long number, long a1, long a2, long a3, long a4, long a5, long a6);

}  // namespace real
}  // namespace tleak::agent
