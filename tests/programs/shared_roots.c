/* Blocks whose only pointers lie in shared memory the program mapped: an anonymous shared mapping
 * (ANON), a memory file (MEMFD), a POSIX shared memory object (SHM, /dev/shm) and a System V
 * segment (SYSV), one 1,000-byte block each; and one block lost (LOST, 555 B). Memcheck reads
 * shared memory as it reads private memory: the four are reachable, the one lost; so must tleak
 * (it read private mappings only, and called the four leaked). Prints "shared". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

static void** map_file(int fd) {
  if (fd < 0 || ftruncate(fd, 4096) != 0) return NULL;
  void** table = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return table == MAP_FAILED ? NULL : table;
}

int main(void) {
  void** anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  void** memfd = map_file(memfd_create("shared-roots", MFD_CLOEXEC));
  char name[64];
  snprintf(name, sizeof name, "/shared-roots-%d", (int)getpid());
  void** shm = map_file(shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600));
  shm_unlink(name);
  const int segment = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
  void** sysv = segment >= 0 ? shmat(segment, NULL, 0) : (void**)-1;
  if (segment >= 0) shmctl(segment, IPC_RMID, NULL);
  if (anon == MAP_FAILED || memfd == NULL || shm == NULL || sysv == (void**)-1) return 1;
  anon[5] = malloc(1000);  /* ANON */
  memfd[6] = malloc(1000); /* MEMFD */
  shm[7] = malloc(1000);   /* SHM */
  sysv[8] = malloc(1000);  /* SYSV */
  void* volatile lost = malloc(555); /* LOST */
  memset(lost, 1, 555);
  lost = NULL;
  printf("shared\n");
  return 0;
}
