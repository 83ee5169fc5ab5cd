/* A program that enters a seccomp sandbox whose filter kills the process at any call that sends or
 * receives on a socket (the calls tleak's agent reaches tleak by), after allocating 100 blocks of
 * 1,000 B (BEFORE) and before allocating 50 of 500 B (AFTER) and freeing 10 of the first. Under
 * tleak it must run as it does alone: the agent stops recording before the filter goes in.
 *   prctl:   prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ...)
 *   seccomp: syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, ...), as libseccomp's seccomp_load
 *   strict:  prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT): then only read, write and exit are allowed,
 *            so it writes its line and exits by the raw call
 *   refused: prctl's filter, failing those calls with EPERM instead of killing */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static void* kept[100];

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  for (int i = 0; i < 100; ++i) kept[i] = malloc(1000); /* BEFORE */
  const int refused = strcmp(argv[1], "refused") == 0;
  static const int forbidden[] = {SYS_sendto, SYS_sendmsg, SYS_recvfrom, SYS_recvmsg, SYS_sendmmsg, SYS_recvmmsg};
  struct sock_filter filter[2 + 2 * 6];
  int n = 0;
  filter[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
  for (int i = 0; i < 6; ++i) {
    filter[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)forbidden[i], 0, 1);
    filter[n++] =
        (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, refused ? SECCOMP_RET_ERRNO | EPERM : SECCOMP_RET_KILL_PROCESS);
  }
  filter[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog program = {(unsigned short)n, filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 1;
  if (strcmp(argv[1], "strict") == 0) {
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0) return 1;
    static const char line[] = "sandboxed\n";
    if (write(1, line, sizeof line - 1) != sizeof line - 1) syscall(SYS_exit, 1);
    syscall(SYS_exit, 0);
  }
  if (strcmp(argv[1], "prctl") == 0 || refused) {
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) return 1;
  } else if (strcmp(argv[1], "seccomp") == 0) {
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) return 1;
  } else {
    return 2;
  }
  void* volatile after[50];
  for (int i = 0; i < 50; ++i) after[i] = malloc(500); /* AFTER */
  for (int i = 0; i < 10; ++i) free(kept[i]);
  static const char line[] = "sandboxed\n";
  return write(1, line, sizeof line - 1) == sizeof line - 1 ? 0 : 1;
}
