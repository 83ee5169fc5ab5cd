/* A program under a seccomp filter, as a sandbox sets, that refuses process_vm_readv, the call the
 * exit scan reads the process's memory with. A block lost (LOST) and a block kept (KEPT). Prints
 * "exiting" and exits with status 0. (x86-64's system call numbers: the filter checks no
 * architecture, and the tests run on the machine it was built for.) */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

static char* kept;

__attribute__((noinline)) static void lose(void) {
  char* volatile lost = malloc(1000); /* LOST */
  memset(lost, 1, 1000);
}

int main(void) {
  kept = malloc(4096); /* KEPT */
  memset(kept, 2, 4096);
  lose();
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  const struct sock_fprog program = {sizeof filter / sizeof filter[0], filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
    return 1;
  }
  printf("exiting\n");
  return 0;
}
