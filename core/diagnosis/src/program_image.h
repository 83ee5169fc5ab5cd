// What a program's ELF file says about whether tleak's interposer can be loaded into it, read
// once with libelf before the program runs.
#pragma once

#include <string>

namespace tleak::diagnosis {

struct ProgramImage {
  // An ELF executable without a program interpreter or dynamic section: statically linked, so
  // nothing can be preloaded into it.
  bool is_static = false;
  // A sanitizer that replaces malloc itself (AddressSanitizer, ThreadSanitizer, MemorySanitizer,
  // HWAddressSanitizer), or empty: its runtime takes every allocation before tleak's interposer
  // could, and as a library it refuses to start unless it comes first. Found as a runtime among
  // the needed libraries (gcc links libasan.so) or a runtime's entry point among the dynamic
  // symbols (clang links the runtime into the program).
  std::string sanitizer;
  // A script ("#!" first): its interpreter is what runs, and is checked when it starts.
  bool is_script = false;
};

// All false and empty when the file is not a readable ELF file or script.
ProgramImage inspect_program(const std::string& path);

}  // namespace tleak::diagnosis
