#include "exit_frame.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdlib.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

namespace tleak::agent {
namespace {

std::uintptr_t g_exit_start = 0, g_exit_end = 0;

}  // namespace

void exit_frame_init() {
  void* exit_function = reinterpret_cast<void*>(&exit);
  Dl_info info;
  void* entry = nullptr;
  if (dladdr1(exit_function, &info, &entry, RTLD_DL_SYMENT) == 0 || entry == nullptr) return;
  const auto size = static_cast<const ElfW(Sym)*>(entry)->st_size;
  if (size == 0) return;
  g_exit_start = reinterpret_cast<std::uintptr_t>(exit_function);
  g_exit_end = g_exit_start + size;
}

bool exit_handlers_frame(std::uintptr_t* stack_pointer, std::uint64_t* registers) {
  if (g_exit_end == 0) return false;
  unw_context_t context;
  unw_cursor_t frame, caller;
  if (unw_getcontext(&context) != 0 || unw_init_local(&frame, &context) != 0) return false;
  caller = frame;
  // A bounded walk: exit's handlers are a few frames below exit.
  for (int depth = 0; depth < 64 && unw_step(&caller) > 0; ++depth, frame = caller) {
    unw_word_t ip = 0;
    if (unw_get_reg(&caller, UNW_REG_IP, &ip) != 0) return false;
    // A return address in exit(): `frame` is the function exit() called.
    if (ip <= g_exit_start || ip > g_exit_end) continue;
    unw_word_t sp = 0;
    if (unw_get_reg(&frame, UNW_REG_SP, &sp) != 0 || sp == 0) return false;
    const unw_regnum_t saved[kExitRegisters] = {UNW_X86_64_RBX, UNW_X86_64_RBP, UNW_X86_64_R12,
                                                UNW_X86_64_R13, UNW_X86_64_R14, UNW_X86_64_R15};
    for (int r = 0; r < kExitRegisters; ++r) {
      unw_word_t value = 0;
      registers[r] = unw_get_reg(&frame, saved[r], &value) == 0 ? value : 0;
    }
    *stack_pointer = sp;
    return true;
  }
  return false;
}

}  // namespace tleak::agent
