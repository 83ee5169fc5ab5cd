#include "exit_frame.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>

#include "agent_memory.h"
#include "next_symbol.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>

namespace tleak::agent {
namespace {

// exit() and quick_exit(), whose handlers' frame the scan reads from: [start, end) each.
struct FunctionRange {
  std::uintptr_t start = 0, end = 0;
  bool holds_return(std::uintptr_t ip) const { return ip > start && ip <= end; }
};
FunctionRange g_exit, g_quick_exit;

FunctionRange range_of(void* function) {
  Dl_info info;
  void* entry = nullptr;
  if (dladdr1(function, &info, &entry, RTLD_DL_SYMENT) == 0 || entry == nullptr) return {};
  const auto size = static_cast<const ElfW(Sym)*>(entry)->st_size;
  if (size == 0) return {};
  const auto start = reinterpret_cast<std::uintptr_t>(function);
  return {start, start + size};
}

using ExitFunction = void (*)(int);
std::atomic<ExitFunction> g_next_exit{nullptr};

__attribute__((constructor)) void find_next_exit() { next_symbol(g_next_exit, "_exit"); }

constexpr unw_regnum_t kSavedRegisters[kExitRegisters] = {UNW_X86_64_RBX, UNW_X86_64_RBP, UNW_X86_64_R12,
                                                          UNW_X86_64_R13, UNW_X86_64_R14, UNW_X86_64_R15};

void read_saved_registers(unw_cursor_t* frame, std::uint64_t* registers) {
  for (int r = 0; r < kExitRegisters; ++r) {
    unw_word_t value = 0;
    registers[r] = unw_get_reg(frame, kSavedRegisters[r], &value) == 0 ? value : 0;
  }
}

struct OwnStackCall {
  FrameContext* here;
  void (*body)(const FrameContext*, void*);
  void* data;
  ucontext_t caller, side;
  alignas(16) unsigned char stack[256 * 1024];
};
__thread OwnStackCall* t_own_stack_call __attribute__((tls_model("initial-exec"))) = nullptr;

void run_own_stack_call() { t_own_stack_call->body(t_own_stack_call->here, t_own_stack_call->data); }

}  // namespace

struct FrameContext {
  unw_context_t registers;
};

[[gnu::noinline]] void on_own_stack_from_here(void (*body)(const FrameContext* here, void* data), void* data) {
  auto* call = static_cast<OwnStackCall*>(map_pages(sizeof(OwnStackCall) + sizeof(FrameContext)));
  if (call == nullptr) {
    FrameContext here;
    if (unw_getcontext(&here.registers) == 0) body(&here, data);
    return;
  }
  call->here = reinterpret_cast<FrameContext*>(call + 1);
  // This frame's registers: it runs until the body is done, so its callers stay as they are.
  if (unw_getcontext(&call->here->registers) != 0 || getcontext(&call->side) != 0) {
    unmap_pages(call, sizeof(OwnStackCall) + sizeof(FrameContext));
    return;
  }
  call->body = body;
  call->data = data;
  call->side.uc_stack.ss_sp = call->stack;
  call->side.uc_stack.ss_size = sizeof call->stack;
  call->side.uc_link = &call->caller;
  makecontext(&call->side, run_own_stack_call, 0);
  OwnStackCall* const outer = t_own_stack_call;
  t_own_stack_call = call;
  swapcontext(&call->caller, &call->side);
  t_own_stack_call = outer;
  unmap_pages(call, sizeof(OwnStackCall) + sizeof(FrameContext));
}

void exit_frame_init() {
  g_exit = range_of(reinterpret_cast<void*>(&exit));
  g_quick_exit = range_of(reinterpret_cast<void*>(&quick_exit));
}

bool exit_handlers_frame(const FrameContext* here, std::uintptr_t* stack_pointer, std::uint64_t* registers) {
  if (g_exit.end == 0 && g_quick_exit.end == 0) return false;
  unw_context_t context = here->registers;  // unw_init_local's is not const
  unw_cursor_t frame, caller;
  if (unw_init_local(&frame, &context) != 0) return false;
  caller = frame;
  // A bounded walk: exit's handlers are a few frames below exit.
  for (int depth = 0; depth < 64 && unw_step(&caller) > 0; ++depth, frame = caller) {
    unw_word_t ip = 0;
    if (unw_get_reg(&caller, UNW_REG_IP, &ip) != 0) return false;
    // A return address in exit() or quick_exit(): `frame` is the function it called.
    if (!g_exit.holds_return(ip) && !g_quick_exit.holds_return(ip)) continue;
    unw_word_t sp = 0;
    if (unw_get_reg(&frame, UNW_REG_SP, &sp) != 0 || sp == 0) return false;
    read_saved_registers(&frame, registers);
    *stack_pointer = sp;
    return true;
  }
  return false;
}

bool exit_call_frame(const CodeRange& agent_code, const FrameContext* here, std::uintptr_t* stack_pointer,
                     std::uint64_t* registers) {
  unw_context_t context = here->registers;
  unw_cursor_t frame;
  if (unw_init_local(&frame, &context) != 0) return false;
  bool in_program = false;
  // Bounded: a stack deeper than this is read as one the walk could not finish (a recursion of
  // 65,536 frames; the walk takes about 0.2 us a frame, once).
  for (int depth = 0; depth < 65536; ++depth) {
    if (unw_is_signal_frame(&frame) > 0) return false;
    if (!in_program) {
      unw_word_t ip = 0;
      if (unw_get_reg(&frame, UNW_REG_IP, &ip) != 0) return false;
      if (!agent_code.holds(reinterpret_cast<const void*>(ip))) {
        unw_word_t sp = 0;
        if (unw_get_reg(&frame, UNW_REG_SP, &sp) != 0 || sp == 0) return false;
        in_program = true;
        *stack_pointer = sp;
        read_saved_registers(&frame, registers);
      }
    }
    const int stepped = unw_step(&frame);
    if (stepped == 0) return in_program;  // the stack's first frame
    if (stepped < 0) return false;
  }
  return false;
}

namespace real {

void exit_call(int status) {
  if (const ExitFunction next = g_next_exit.load(std::memory_order_acquire)) next(status);
  for (;;) ::syscall(SYS_exit_group, status);  // no C library _exit found: what it does
}

}  // namespace real
}  // namespace tleak::agent
