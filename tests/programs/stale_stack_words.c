/* A worker thread loses a block in a call that leaves copies of its address in its frame, then
 * blocks as the program exits: the copies lie below the thread's stack pointer, in dead frames.
 * Memcheck reads a thread's stack from its stack pointer up and calls the block lost; so must tleak
 * (it read the whole stack, and called it reachable).
 *   directly lost: 900 B (STALE)
 * x86-64: the worker's system call is written out, and the registers that could still hold the
 * address are cleared, so that only the dead frames do. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int pipe_fds[2];
static volatile int ready;

__attribute__((noinline)) static void leave_copies(uintptr_t address) {
  volatile uintptr_t copies[256];
  for (int i = 0; i < 256; ++i) copies[i] = address;
}

/* Its frame (512 bytes of zeros) lies between the worker's and the copies: past the 128 bytes
 * below the stack pointer that a leaf function may use, which are read. */
__attribute__((noinline)) static void lose_deep(void) {
  volatile uintptr_t spacer[64];
  for (int i = 0; i < 64; ++i) spacer[i] = 0;
  char* lost = malloc(900); /* STALE */
  memset(lost, 3, 900);
  leave_copies((uintptr_t)lost);
  spacer[1] = spacer[0]; /* after the call: no tail call into this frame's place */
}

static void* worker(void* unused) {
  (void)unused;
  lose_deep();
  ready = 1;
  long result = SYS_read;
  char byte;
  /* Blocks until the program has exited: nothing ever writes to the pipe. */
  __asm__ volatile("xor %%r8d, %%r8d\n\txor %%r9d, %%r9d\n\txor %%r10d, %%r10d\n\tsyscall"
                   : "+a"(result)
                   : "D"((long)pipe_fds[0]), "S"(&byte), "d"(1L)
                   : "rcx", "r8", "r9", "r10", "r11", "memory");
  return NULL;
}

int main(void) {
  if (pipe(pipe_fds) != 0) return 1;
  pthread_t thread;
  if (pthread_create(&thread, NULL, worker, NULL) != 0) return 1;
  while (!ready) usleep(1000);
  usleep(50000); /* the worker into its call */
  printf("exiting\n");
  return 0;
}
