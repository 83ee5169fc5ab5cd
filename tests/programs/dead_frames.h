/* For the test programs whose lost blocks' addresses lie in dead frames, below a thread's stack
 * pointer (stale_stack_words.c, ended_thread_stacks.c). x86-64: the waiting thread's system call is
 * written out, and the registers that could still hold an address are cleared. */
#pragma once

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

__attribute__((noinline)) static void leave_copies(uintptr_t address) {
  volatile uintptr_t copies[256];
  for (int i = 0; i < 256; ++i) copies[i] = address;
}

/* Loses a 900-byte block in a call that leaves 256 copies of its address in its frame. Its own
 * frame (512 bytes of zeros) lies between the caller's and the copies: past the 128 bytes below
 * the stack pointer that a leaf function may use, which are read. */
__attribute__((noinline)) static void lose_in_dead_frames(void) {
  volatile uintptr_t spacer[64];
  for (int i = 0; i < 64; ++i) spacer[i] = 0;
  char* lost = malloc(900); /* STALE */
  memset(lost, 3, 900);
  leave_copies((uintptr_t)lost);
  spacer[1] = spacer[0]; /* after the call: no tail call into this frame's place */
}

/* Reads one byte from `fd`, which nothing ever writes to: waits until the program has exited. */
static inline void wait_in_read(int fd) {
  long result = SYS_read;
  char byte;
  __asm__ volatile("xor %%r8d, %%r8d\n\txor %%r9d, %%r9d\n\txor %%r10d, %%r10d\n\tsyscall"
                   : "+a"(result)
                   : "D"((long)fd), "S"(&byte), "d"(1L)
                   : "rcx", "r8", "r9", "r10", "r11", "memory");
}
