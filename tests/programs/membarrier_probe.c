/* Asks the kernel for the process's private expedited memory barrier without registering for it
 * (membarrier(2)): refused with EPERM, under tleak as without it. An agent that registered the
 * process for its own use (as one version of tleak's did, for the locks of its thread buffers)
 * would make the call succeed: what the program sees would change.
 * Expected output, both ways: "membarrier without registering: EPERM". */
#include <errno.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
  free(malloc(64)); /* the agent has recorded something by now */
  const long got = syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  printf("membarrier without registering: %s\n", got == 0 ? "done" : errno == EPERM ? "EPERM" : "other error");
  return 0;
}
