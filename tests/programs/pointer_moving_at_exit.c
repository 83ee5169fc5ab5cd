/* A block whose only pointer a thread keeps moving, as the program exits (main returns while it
 * runs): from the block that carries it into one the thread has just allocated, whose address
 * goes into a local of the thread's, then the old carrier freed.
 *   kept:     4,096 B (KEPT), from main, reachable all along through the current carrier
 *   carriers: 32 B (CARRIER), two at a time at most, the older freed after the move
 *   lost:     1,000 B (LOST), from main
 *   ballast:  200,000 blocks of 16 B (BALLAST), reachable from a global array: the exit scan
 *             takes tens of milliseconds, in which the thread runs
 * Expected: leaked exactly 1,000 B in 1 block, the kept block reachable. A scan that read the
 * thread's local and the carriers at different moments of the thread's moves (the thread running
 * on meanwhile) found no carrier holding the pointer: the kept block was called lost. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void* volatile first_carrier;

static void* move_forever(void* unused) {
  (void)unused;
  void** volatile carrier = first_carrier;
  first_carrier = NULL;
  for (;;) {
    void** volatile next = malloc(32); /* CARRIER */
    next[0] = carrier[0];
    carrier[0] = NULL;
    free(carrier);
    carrier = next;
    /* The kept block's address now lies in the new carrier alone: none of the registers the move
     * went through keeps it (x86-64; those the compiler may use for it unoptimized). */
    __asm__ volatile(
        "xor %%eax, %%eax\n\txor %%ecx, %%ecx\n\txor %%edx, %%edx\n\txor %%esi, %%esi\n\t"
        "xor %%edi, %%edi\n\txor %%r8d, %%r8d\n\txor %%r9d, %%r9d\n\txor %%r10d, %%r10d\n\t"
        "xor %%r11d, %%r11d" ::
            : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory");
    for (volatile int k = 0; k < 100; ++k) {
    }
  }
  return NULL;
}

/* A function of its own, so that no pointer to the lost block survives in main's frame or
 * registers. */
__attribute__((noinline)) static void lose(void) {
  char* volatile p = malloc(1000); /* LOST */
  memset(p, 1, 1000);
}

enum { kBallast = 200000 };
static void* ballast[kBallast];

/* The kept block into the first carrier, from a frame of its own (main's keeps no copy). */
__attribute__((noinline)) static void start_carrying(void) {
  void** carrier = malloc(32); /* CARRIER */
  carrier[0] = malloc(4096);   /* KEPT */
  memset(carrier[0], 1, 4096);
  first_carrier = carrier;
}

int main(void) {
  for (int i = 0; i < kBallast; ++i) ballast[i] = malloc(16); /* BALLAST */
  start_carrying();
  pthread_t thread;
  if (pthread_create(&thread, NULL, move_forever, NULL) != 0) return 1;
  usleep(20000); /* the thread well under way */
  lose();
  return 0;
}
