// Allocations under frames of every shape the agent's own stack walk meets (agent/src/fast_unwind.h):
// frames whose CFA is rbp-based (alloca), rsp-based with pushes (-O2, no frame pointer), a stack
// realigned for an over-aligned local, a frame whose CFA is a DWARF expression (written in
// assembly, so that every compiler makes it; the walk leaves such frames to libunwind), mutual
// recursion of the two kinds past 64 frames, four threads at once, and a signal handler (whose caller is the kernel's signal frame, another rule
// the walk leaves to libunwind). Built at -O2. With TLEAK_AGENT_CHECK_UNWIND=1 the agent walks
// every stack both ways and prints how many differed and how many it left to libunwind
// (tests/agent/program_unchanged_test.cc, ProgramRun.TheAgentsStackWalkGivesLibunwindsAddresses). Prints
// "allocations N, left to libunwind L": L made in the signal handler and under the expression
// frame. (GCC describes a stack realigned with alloca and arguments on the stack by expressions
// too, clang does not: such a frame would make L the compiler's, so none is here.)
#include <alloca.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Each function below keeps a frame of its own: not inlined, not cloned, not merged (clang has no
// noipa, and ignores it).
#if defined(__clang__)
#define OWN_FRAME __attribute__((noinline))
#else
#define OWN_FRAME __attribute__((noipa))
#endif

static volatile unsigned sink;
static int left_to_libunwind;
// Where each block's address goes: a compiler may drop a malloc whose block never escapes.
void* volatile unwind_shapes_last_block;

OWN_FRAME void allocate_block(size_t n) {
  char* p = malloc(n);
  unwind_shapes_last_block = p;
  p[0] = (char)n;
  sink += (unsigned char)p[0];
  free(p);
}

// allocate_block(n) from a frame whose CFA is given by an expression (DW_OP_breg7 16:
// rsp + 16, what a plain rule would say as well).
void expression_frame(size_t n);
__asm__(
    "  .text\n"
    "  .globl expression_frame\n"
    "  .type expression_frame, @function\n"
    "expression_frame:\n"
    "  .cfi_startproc\n"
    "  subq $8, %rsp\n"
    "  .cfi_escape 0x0f, 0x02, 0x77, 0x10\n" /* DW_CFA_def_cfa_expression, 2 bytes: DW_OP_breg7 16 */
    "  call allocate_block\n"
    "  addq $8, %rsp\n"
    "  .cfi_def_cfa %rsp, 8\n"
    "  ret\n"
    "  .cfi_endproc\n"
    "  .size expression_frame, .-expression_frame\n");

OWN_FRAME static unsigned rsp_frames(int depth, unsigned a, unsigned b);

// alloca keeps rbp as the frame pointer: the CFA is rbp + 16 here.
OWN_FRAME static unsigned rbp_frames(int depth, unsigned a) {
  char* scratch = alloca(16 + (a & 63));
  memset(scratch, (int)a, 16);
  if (depth == 0) {
    allocate_block(24 + (a & 31));
    return (unsigned)scratch[3];
  }
  // Not a tail call: the result is used after it.
  const unsigned below = (depth & 1) ? rsp_frames(depth - 1, a * 3 + 1, a) : rbp_frames(depth - 1, a + 7);
  return below + (unsigned)scratch[depth & 15];
}

// Many live values across the call: callee-saved registers pushed, the CFA rsp-based.
OWN_FRAME static unsigned rsp_frames(int depth, unsigned a, unsigned b) {
  unsigned c = a * 5 + b, d = b ^ (a << 3), e = a + b * 11, f = c ^ d;
  if (depth == 0) {
    allocate_block(40 + ((c + d) & 63));
    return c + d + e + f;
  }
  const unsigned below = (depth % 3 == 0) ? rbp_frames(depth - 1, c) : rsp_frames(depth - 1, d, e);
  return below + c * d + e * f;
}

// A local aligned beyond the ABI's 16 bytes: the function realigns its stack.
OWN_FRAME static unsigned realigned(int depth) {
  char block[128] __attribute__((aligned(64)));
  memset(block, depth, sizeof block);
  sink += (unsigned char)block[depth & 127];
  allocate_block(56 + (size_t)(depth & 7));
  return depth > 0 ? realigned(depth - 1) + (unsigned char)block[1] : 0;
}

static int shapes(unsigned seed) {
  int n = 0;
  for (int depth = 0; depth < 90; depth += 3) {
    sink += rbp_frames(depth, seed + (unsigned)depth);
    sink += rsp_frames(depth, seed, (unsigned)depth);
    n += 2;
  }
  sink += realigned(5);
  expression_frame(104);
  __atomic_fetch_add(&left_to_libunwind, 1, __ATOMIC_RELAXED);
  return n + 7;
}

static void on_signal(int signal_number) {
  (void)signal_number;
  for (int i = 0; i < 5; ++i) allocate_block(72);
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
