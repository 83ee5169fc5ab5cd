#include "stack_room.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <ucontext.h>

namespace tleak::agent {

__thread std::uintptr_t t_stack_low __attribute__((tls_model("initial-exec"))) = 0;
__thread std::uintptr_t t_stack_high __attribute__((tls_model("initial-exec"))) = 0;
__thread std::uintptr_t t_alt_stack_low __attribute__((tls_model("initial-exec"))) = 0;
__thread std::uintptr_t t_alt_stack_size __attribute__((tls_model("initial-exec"))) = 0;

namespace {

__thread bool t_bounds_read __attribute__((tls_model("initial-exec"))) = false;

// This thread's usable stack's low end (glibc reports it without the guard pages below), or 0; and
// its high end into `*high` (unchanged if unknown).
std::uintptr_t read_stack_low(std::uintptr_t* high) {
  pthread_attr_t attributes;
  if (pthread_getattr_np(pthread_self(), &attributes) != 0) return 0;
  void* base = nullptr;
  std::size_t size = 0;
  std::uintptr_t low = 0;
  if (pthread_attr_getstack(&attributes, &base, &size) == 0 && size >= kUnwindStackRoom) {
    low = reinterpret_cast<std::uintptr_t>(base);
    *high = low + size;
  }
  pthread_attr_destroy(&attributes);
  return low;
}

// read_stack_low run on a stack of its own: the thread that asks is deep in its stack, maybe with
// less left than pthread_getattr_np (and the allocation it makes) takes. The contexts live there
// too (a ucontext_t is about 1 KiB).
struct SideCall {
  ucontext_t caller;
  ucontext_t side;
  std::uintptr_t low, high;
  alignas(16) unsigned char stack[kSideStackBytes];
};

__thread SideCall* t_side_call __attribute__((tls_model("initial-exec"))) = nullptr;

void read_stack_low_on_side() { t_side_call->low = read_stack_low(&t_side_call->high); }

std::uintptr_t read_stack_low_on_a_side_stack(std::uintptr_t* high) {
  void* memory = mmap(nullptr, sizeof(SideCall), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return 0;  // unknown: every frame then has room, as before the bounds
  auto* call = static_cast<SideCall*>(memory);
  call->low = 0;
  call->high = *high;
  t_side_call = call;
  if (getcontext(&call->side) == 0) {
    call->side.uc_stack.ss_sp = call->stack;
    call->side.uc_stack.ss_size = sizeof call->stack;
    call->side.uc_link = &call->caller;
    makecontext(&call->side, read_stack_low_on_side, 0);
    swapcontext(&call->caller, &call->side);
  }
  t_side_call = nullptr;
  const std::uintptr_t low = call->low;
  *high = call->high;
  munmap(memory, sizeof(SideCall));
  return low;
}

// Reads the bounds into t_stack_low and t_stack_high (t_stack_low 0 if unknown).
void read_bounds_on_a_side_stack() {
  std::uintptr_t high = t_stack_high;
  t_stack_low = read_stack_low_on_a_side_stack(&high);
  t_stack_high = high;
}

}  // namespace

void note_stack_start(std::uintptr_t here) {
  // A thread's first recorded allocation is rarely deeper than this below the top of its stack
  // (the thread's descriptor): farther, `here` is more likely on a stack of the program's own (a
  // coroutine's, tests/programs/coroutine_stack.c thread), which would make bad stand-in bounds.
  constexpr std::uintptr_t kFirstFrameDepth = 256 * 1024;
  t_stack_high = reinterpret_cast<std::uintptr_t>(pthread_self());
  if (here - t_alt_stack_low < t_alt_stack_size || here >= t_stack_high || t_stack_high - here > kFirstFrameDepth) {
    // First seen in a signal handler on its alternate stack, or on a stack of the program's own:
    // `here` says nothing of the thread's own stack, whose bounds are read now instead.
    t_bounds_read = true;
    read_bounds_on_a_side_stack();
    return;
  }
  t_bounds_read = false;
  t_stack_low = here > kStackSlack + kUnwindStackRoom ? here - kStackSlack - kUnwindStackRoom : 0;
}

void note_main_stack(std::uintptr_t loader_frame) {
  // The main thread's stack grows down to its size limit from above where the loader started the
  // program (its arguments, environment and auxiliary vector lie between, a few pages).
  constexpr std::uintptr_t kAboveLoaderFrame = std::uintptr_t{16} << 20;
  constexpr std::uintptr_t kUnlimited = std::uintptr_t{4} << 30;
  rlimit limit{};
  const std::uintptr_t size = getrlimit(RLIMIT_STACK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
                                      limit.rlim_cur > kUnlimited
                                  ? kUnlimited
                                  : limit.rlim_cur;
  t_bounds_read = true;
  t_stack_high = loader_frame + kAboveLoaderFrame < loader_frame ? 0 : loader_frame + kAboveLoaderFrame;
  t_stack_low = loader_frame > size ? loader_frame - size : 0;
}

void note_alternate_stack(const void* low, std::size_t size, bool disabled) {
  t_alt_stack_low = disabled ? 0 : reinterpret_cast<std::uintptr_t>(low);
  t_alt_stack_size = disabled ? 0 : size;
}

StackRoom stack_room_slow(std::uintptr_t here) {
  if (!t_bounds_read) {
    t_bounds_read = true;
    read_bounds_on_a_side_stack();
  }
  // Not on the thread's stack (with its bounds known): a stack of the program's own making.
  if (here < t_stack_low || (t_stack_high != 0 && here >= t_stack_high)) return StackRoom::kFastWalkOnly;
  return here - t_stack_low >= kUnwindStackRoom ? StackRoom::kFull : StackRoom::kNone;
}

}  // namespace tleak::agent
