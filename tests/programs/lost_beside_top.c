/* Loses one block of 1,000 bytes, the last one the C library's malloc carves from its top chunk:
 * the malloc's own state then points at the top chunk's header, which lies in the lost block's last
 * 8 bytes (a 1,000-byte block has a 1,008-byte chunk), and that word is no pointer of the
 * program's. Expected: leaked exactly 1,000 B in 1 block (LOST), as memcheck says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void lose(void) {
  char* volatile lost = malloc(1000); /* LOST */
  memset(lost, 1, 1000);
}

int main(void) {
  printf("losing 1000 bytes\n");
  fflush(stdout);  /* stdout's buffer is allocated before the lost block, not after */
  lose();
  return 0;
}
