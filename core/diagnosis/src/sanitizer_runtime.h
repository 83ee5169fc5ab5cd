// Whether a program is built with a sanitizer that replaces malloc itself (AddressSanitizer,
// ThreadSanitizer, MemorySanitizer, HWAddressSanitizer). Its runtime takes every allocation before
// tleak's interposer could, and as a library it refuses to start unless it comes first: tleak
// would record nothing, or the program would not run at all.
#pragma once

#include <string>

namespace tleak::diagnosis {

// The sanitizer's name, read from the program's ELF file: a runtime among its needed libraries
// (gcc links libasan.so) or a runtime's entry point among its dynamic symbols (clang links the
// runtime into the program). Empty when there is none, or the file is not a readable ELF file.
std::string sanitizer_runtime(const std::string& path);

}  // namespace tleak::diagnosis
