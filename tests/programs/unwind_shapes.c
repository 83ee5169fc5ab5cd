// Allocations under frames of every shape the agent's own stack walk meets (agent/src/fast_unwind.h):
// frames whose CFA is rbp-based (alloca), rsp-based with pushes (-O2, no frame pointer), a stack
// realigned for an over-aligned local, the same with alloca and arguments on the stack (GCC then
// keeps the CFA in r10 and describes it by DWARF expressions, which the walk leaves to libunwind), mutual
// recursion of the two kinds past 64 frames, four
// threads at once, and a signal handler (whose caller is the kernel's signal frame, a rule the
// walk leaves to libunwind). Built at -O2. With TLEAK_AGENT_CHECK_UNWIND=1 the agent walks every
// stack both ways and prints how many differed and how many it left to libunwind
// (tests/agent/program_test.cc, ProgramRun.TheAgentsStackWalkGivesLibunwindsAddresses). Prints
// "allocations N, left to libunwind L": L made in the signal handler and the expression frames.
#include <alloca.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile unsigned sink;
static int left_to_libunwind;

__attribute__((noipa)) static void allocate(size_t n) {
  char* p = malloc(n);
  p[0] = (char)n;
  sink += (unsigned char)p[0];
  free(p);
}

__attribute__((noipa)) static unsigned rsp_frames(int depth, unsigned a, unsigned b);

// alloca keeps rbp as the frame pointer: the CFA is rbp + 16 here.
__attribute__((noipa)) static unsigned rbp_frames(int depth, unsigned a) {
  char* scratch = alloca(16 + (a & 63));
  memset(scratch, (int)a, 16);
  if (depth == 0) {
    allocate(24 + (a & 31));
    return (unsigned)scratch[3];
  }
  // Not a tail call: the result is used after it.
  const unsigned below = (depth & 1) ? rsp_frames(depth - 1, a * 3 + 1, a) : rbp_frames(depth - 1, a + 7);
  return below + (unsigned)scratch[depth & 15];
}

// Many live values across the call: callee-saved registers pushed, the CFA rsp-based.
__attribute__((noipa)) static unsigned rsp_frames(int depth, unsigned a, unsigned b) {
  unsigned c = a * 5 + b, d = b ^ (a << 3), e = a + b * 11, f = c ^ d;
  if (depth == 0) {
    allocate(40 + ((c + d) & 63));
    return c + d + e + f;
  }
  const unsigned below = (depth % 3 == 0) ? rbp_frames(depth - 1, c) : rsp_frames(depth - 1, d, e);
  return below + c * d + e * f;
}

// A local aligned beyond the ABI's 16 bytes: the function realigns its stack.
__attribute__((noipa)) static unsigned realigned(int depth) {
  char block[128] __attribute__((aligned(64)));
  memset(block, depth, sizeof block);
  sink += (unsigned char)block[depth & 127];
  allocate(56 + (size_t)(depth & 7));
  return depth > 0 ? realigned(depth - 1) + (unsigned char)block[1] : 0;
}

// Realigned, with alloca and its seventh and eighth arguments on the stack: the CFA is an expression.
__attribute__((noipa)) static unsigned stack_arguments(int a1, int a2, int a3, int a4, int a5, int a6, int a7,
                                                         int a8) {
  char block[128] __attribute__((aligned(64)));
  char* more = alloca(8 + (size_t)(a1 & 31));
  memset(block, a1 + a8, sizeof block);
  memset(more, a7, 8);
  sink += (unsigned char)block[a7 & 127] + (unsigned char)more[a8 & 7];
  allocate(88);
  return (unsigned)(a2 + a3 + a4 + a5 + a6) + (unsigned char)block[5];
}

static int shapes(unsigned seed) {
  int n = 0;
  for (int depth = 0; depth < 90; depth += 3) {
    sink += rbp_frames(depth, seed + (unsigned)depth);
    sink += rsp_frames(depth, seed, (unsigned)depth);
    n += 2;
  }
  sink += realigned(5);
  sink += stack_arguments((int)seed, 2, 3, 4, 5, 6, 7, 8);
  __atomic_fetch_add(&left_to_libunwind, 1, __ATOMIC_RELAXED);
  return n + 7;
}

static void on_signal(int signal_number) {
  (void)signal_number;
  for (int i = 0; i < 5; ++i) allocate(72);
  __atomic_fetch_add(&left_to_libunwind, 5, __ATOMIC_RELAXED);
}

static void* thread_main(void* arg) {
  int* made = arg;
  *made = shapes((unsigned)(size_t)made);
  return NULL;
}

int main(void) {
  int total = shapes(1);
  signal(SIGUSR1, on_signal);
  raise(SIGUSR1);
  total += 5;
  pthread_t threads[4];
  int made[4] = {0};
  for (int i = 0; i < 4; ++i) pthread_create(&threads[i], NULL, thread_main, &made[i]);
  for (int i = 0; i < 4; ++i) {
    pthread_join(threads[i], NULL);
    total += made[i];
  }
  printf("allocations %d, left to libunwind %d\n", total, left_to_libunwind);
  return 0;
}
