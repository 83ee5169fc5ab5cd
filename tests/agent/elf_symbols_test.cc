// The agent's own lookup of a function by name in the loaded objects' symbol tables
// (elf_symbols.h), which stands for dlsym(RTLD_NEXT) without resetting the caller's dlerror().
#include "elf_symbols.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace tleak::agent {
namespace {

using Probe = int (*)();

// Any function of this test program, the first object loaded: a lookup "after" it reads all others.
int in_this_program() { return 0; }
const void* self() { return reinterpret_cast<const void*>(&in_this_program); }

TEST(ElfSymbols, FindsFunctionsByEitherHashTableInObjectsLoadedLocally) {
  ASSERT_NE(dlopen(TLEAK_ELF_GNU_PROBE, RTLD_NOW | RTLD_LOCAL), nullptr) << dlerror();
  ASSERT_NE(dlopen(TLEAK_ELF_SYSV_PROBE, RTLD_NOW | RTLD_LOCAL), nullptr) << dlerror();
  const auto gnu = reinterpret_cast<Probe>(find_function_after(self(), "tleak_elf_probe_gnu"));
  const auto sysv = reinterpret_cast<Probe>(find_function_after(self(), "tleak_elf_probe_sysv"));
  ASSERT_NE(gnu, nullptr);
  ASSERT_NE(sysv, nullptr);
  EXPECT_EQ(gnu(), 41);
  EXPECT_EQ(sysv(), 42);
  EXPECT_EQ(find_function_after(self(), "tleak_elf_no_object_defines_this"), nullptr);
  // Only objects after the one given: the SysV probe was loaded last.
  EXPECT_EQ(find_function_after(reinterpret_cast<const void*>(sysv), "tleak_elf_probe_gnu"), nullptr);
}

TEST(ElfSymbols, FindsOnlyTheDefaultVersion) {
  ASSERT_NE(dlopen(TLEAK_ELF_GNU_PROBE, RTLD_NOW | RTLD_LOCAL), nullptr) << dlerror();
  ASSERT_NE(dlopen(TLEAK_ELF_SYSV_PROBE, RTLD_NOW | RTLD_LOCAL), nullptr) << dlerror();
  // Both probes define it; the first loaded (GNU hash) answers, with its default version.
  const auto versioned = reinterpret_cast<Probe>(find_function_after(self(), "tleak_elf_versioned"));
  ASSERT_NE(versioned, nullptr);
  EXPECT_EQ(versioned(), 2);
  // The GNU probe has it only in a version a lookup by name never binds to: the SysV probe's.
  const auto hidden_first = reinterpret_cast<Probe>(find_function_after(self(), "tleak_elf_hidden_first"));
  ASSERT_NE(hidden_first, nullptr);
  EXPECT_EQ(hidden_first(), 42);
}

TEST(ElfSymbols, AgreesWithTheLoaderOnTheCLibrary) {
  // What dlsym(RTLD_NEXT) from this program binds to (the C library's, or a sanitizer's before it).
  for (const char* name : {"free", "malloc", "dlopen", "pthread_create"}) {
    EXPECT_EQ(find_function_after(self(), name), dlsym(RTLD_NEXT, name)) << name;
  }
}

}  // namespace
}  // namespace tleak::agent
