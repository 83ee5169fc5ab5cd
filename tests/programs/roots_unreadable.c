/* A program whose exit scan cannot read its roots, with a block lost (LOST) and a block kept (KEPT).
 * argv[1]: "descriptors": it exits with every file descriptor it may open taken, so the scan cannot
 * open the process's memory map (/proc/self/maps), which lists the roots; "seccomp": it runs under
 * a seccomp filter, as a sandbox sets, that refuses process_vm_readv, the call the scan reads the
 * process's memory with (x86-64's system call numbers: the filter checks no architecture, and the
 * tests run on the machine it was built for). Prints "exiting" and exits with status 0. */
#include <errno.h>
#include <fcntl.h>
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

static int refuse_process_vm_readv(void) {
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  const struct sock_fprog program = {sizeof filter / sizeof filter[0], filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program);
}

int main(int argc, char** argv) {
  const int seccomp = argc > 1 && strcmp(argv[1], "seccomp") == 0;
  if (argc < 2 || (!seccomp && strcmp(argv[1], "descriptors") != 0)) return 2;
  kept = malloc(4096); /* KEPT */
  memset(kept, 2, 4096);
  lose();
  if (seccomp && refuse_process_vm_readv() != 0) return 1;
  printf("exiting\n");
  fflush(stdout);
  if (!seccomp) {
    while (open("/dev/null", O_RDONLY) >= 0) {
    }
  }
  return 0;
}
