#include "tleak/symbolizer.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "own_modules.h"
#include "signal_trampoline.h"

namespace tleak {
namespace {

[[gnu::noinline]] std::uintptr_t return_address_into_this_test() {
  return reinterpret_cast<std::uintptr_t>(__builtin_return_address(0));
}

TEST(Symbolizer, NamesFunctionModuleFileAndLine) {
  const int call_line = __LINE__; const std::uintptr_t address = return_address_into_this_test();
  Symbolizer symbolizer;
  const Frame& frame = symbolizer.symbolize(address);
  EXPECT_NE(frame.function.find("Symbolizer_NamesFunctionModuleFileAndLine_Test::TestBody"),
            std::string::npos)
      << frame.function;
  EXPECT_EQ(frame.module, "allocator_tests");
  EXPECT_TRUE(frame.file.ends_with("symbolizer_test.cc")) << frame.file;
  EXPECT_EQ(frame.line, call_line);
  EXPECT_GT(frame.module_offset, 0u);
  EXPECT_LT(frame.module_offset, frame.address);
}

TEST(Symbolizer, CachesEachAddressOnce) {
  Symbolizer symbolizer;
  const std::uintptr_t address = return_address_into_this_test();
  const Frame& first = symbolizer.symbolize(address);
  const Frame& second = symbolizer.symbolize(address);
  EXPECT_EQ(&first, &second);
}

TEST(Symbolizer, UnknownAddressesAreMarkedNotInvented) {
  Symbolizer symbolizer;
  const Frame& frame = symbolizer.symbolize(0x10);
  EXPECT_EQ(frame.function, "??");
  EXPECT_TRUE(frame.module.empty());
  EXPECT_EQ(frame.line, 0);
}

// The frame of the kernel's signal frame: where a handler returns to.
TEST(Symbolizer, NamesTheSignalFrame) {
  const std::uintptr_t trampoline = testing::signal_trampoline();
  ASSERT_NE(trampoline, 0u);
  Symbolizer symbolizer;
  const Frame& frame = symbolizer.symbolize(trampoline);
  EXPECT_EQ(frame.function, kSignalFrameName);
  EXPECT_EQ(frame.module, "libc.so.6");
  EXPECT_TRUE(frame.file.empty()) << frame.file;
  // One byte on is inside the trampoline, where no handler returns: not named so.
  EXPECT_NE(symbolizer.symbolize(trampoline + 1).function, kSignalFrameName);
}

using testing::expect_same_frame;
using testing::own_modules;

TEST(Symbolizer, ModulesAddedAndReadAheadResolveAsThoseGivenAtOnce) {
  const std::uintptr_t address = return_address_into_this_test();
  const std::vector<ModuleInfo> modules = own_modules();
  ASSERT_GT(modules.size(), 2u);
  Symbolizer at_once(modules);
  const Frame expected = at_once.symbolize(address);
  ASSERT_TRUE(expected.file.ends_with("symbolizer_test.cc")) << expected.file;

  Symbolizer ahead(std::vector<ModuleInfo>{});
  EXPECT_FALSE(ahead.prepare_next_module());  // nothing added yet
  ahead.add_modules({modules.begin(), modules.begin() + 1});
  EXPECT_FALSE(ahead.all_modules_prepared());
  ahead.add_modules(modules);  // the first again, then the rest: each module once
  std::size_t prepared = 0;
  while (ahead.prepare_next_module()) ++prepared;
  std::size_t on_disk = 0;
  for (const ModuleInfo& m : modules) on_disk += !m.path.empty() && m.path[0] == '/';
  EXPECT_EQ(prepared, on_disk);
  EXPECT_TRUE(ahead.all_modules_prepared());
  ahead.add_modules(modules);
  EXPECT_FALSE(ahead.prepare_next_module());

  const Frame& frame = ahead.symbolize(address);
  expect_same_frame(frame, expected);
}

// A module whose file cannot be opened (here: no descriptor left, as under a low hard limit) names
// its frames with the module and the reason, not a bare "??" that reads as code of no module.
TEST(Symbolizer, AModuleThatCannotBeOpenedSaysWhy) {
  const std::uintptr_t address = return_address_into_this_test();
  const std::vector<ModuleInfo> modules = own_modules();
  rlimit given{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &given), 0);
  std::vector<int> fillers;
  for (int fd; (fd = dup(2)) >= 0 && fillers.size() < 100000;) fillers.push_back(fd);
  // Every number taken, the limit just above: nothing more can be opened.
  rlimit low = given;
  low.rlim_cur = static_cast<rlim_t>(fillers.empty() ? 3 : fillers.back() + 1);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  Symbolizer symbolizer(modules);
  for (const int fd : fillers) close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &given), 0);
  const Frame& frame = symbolizer.symbolize(address);
  EXPECT_EQ(frame.module, "allocator_tests");
  EXPECT_EQ(frame.function.rfind("?? (allocator_tests could not be opened: ", 0), 0u) << frame.function;
  EXPECT_GT(frame.module_offset, 0u);
}

TEST(Demangle, ReadableNamesAndPassThrough) {
  EXPECT_EQ(demangle("_ZN5tleak3Foo3barEi"), "tleak::Foo::bar(int)");
  EXPECT_EQ(demangle("main"), "main");
  // C functions whose names read as a type's code in a mangled name.
  EXPECT_EQ(demangle("w"), "w");
  EXPECT_EQ(demangle("f"), "f");
  EXPECT_EQ(demangle("St"), "St");
  EXPECT_EQ(demangle(nullptr), "??");
}

}  // namespace
}  // namespace tleak
