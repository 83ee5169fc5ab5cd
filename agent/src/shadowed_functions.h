// The allocation functions the program's executable defines itself (a malloc built into it), ahead
// of the agent in the loader's order: calls to them never reach the agent, and a report that saw
// none of them must say so rather than read as a program that allocates nothing.
#pragma once

#include <cstdint>

namespace tleak::agent {

// Bit i set: kInterposedFunctions[i]'s first definition in the process is not the agent's. At
// start-up, inside the agent (dlsym may allocate on a miss: the allocation passes through), before
// the program's own code has run: dlsym resets the thread's dlerror() state, which then holds
// nothing of the program's (elf_symbols.h says why that matters later).
std::uint32_t shadowed_functions();

}  // namespace tleak::agent
