#include "module_preparer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "own_modules.h"

namespace tleak::diagnosis {
namespace {

using testing::expect_same_frame;
using testing::own_modules;

[[gnu::noinline]] std::uintptr_t return_address_into_this_test() {
  return reinterpret_cast<std::uintptr_t>(__builtin_return_address(0));
}

// The map arrives in pieces while the thread reads (as a program loads libraries), a snapshot's
// report asks for a frame meanwhile, and the symbolizer handed over at the end resolves as one made
// from the final map at once.
TEST(ModulePreparer, ResolvesWhileReadingAndHandsOverTheWholeMap) {
  const std::uintptr_t address = return_address_into_this_test();
  const std::vector<ModuleInfo> modules = own_modules();
  ASSERT_GT(modules.size(), 2u);
  Symbolizer at_once(modules);
  const Frame expected = at_once.symbolize(address);
  ASSERT_TRUE(expected.file.ends_with("module_preparer_test.cc")) << expected.file;

  ModulePreparer preparer;
  for (std::size_t n = 1; n <= modules.size(); ++n) {
    preparer.set_modules({modules.begin(), modules.begin() + static_cast<std::ptrdiff_t>(n)});
    if (n == modules.size() / 2) {
      // The executable is the first module: a snapshot half-way resolves it already.
      preparer.with_symbolizer([&](Symbolizer& symbolizer) {
        EXPECT_EQ(symbolizer.symbolize(address).line, expected.line);
      });
    }
  }
  const std::unique_ptr<Symbolizer> handed = preparer.finish();
  ASSERT_NE(handed, nullptr);
  const Frame& frame = handed->symbolize(address);
  expect_same_frame(frame, expected);
}

// Given a map and let be, the thread reads every module of it before anyone asks.
TEST(ModulePreparer, ReadsEveryModuleAheadOfTheFirstLookup) {
  const std::vector<ModuleInfo> modules = own_modules();
  ModulePreparer preparer;
  preparer.set_modules(modules);
  bool all_read = false;
  for (int tries = 0; tries < 1000 && !all_read; ++tries) {
    preparer.with_symbolizer([&](Symbolizer& symbolizer) { all_read = symbolizer.all_modules_prepared(); });
    if (!all_read) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(all_read);
}

// Ended at any moment, with or without finish(): no hang, nothing left running.
TEST(ModulePreparer, EndsAtAnyMoment) {
  const std::vector<ModuleInfo> modules = own_modules();
  for (int i = 0; i < 20; ++i) {
    ModulePreparer preparer;
    preparer.set_modules(modules);
    if (i % 2 == 0) {
      EXPECT_NE(preparer.finish(), nullptr);
    }
  }
  ModulePreparer unused;
  EXPECT_NE(unused.finish(), nullptr);
}

}  // namespace
}  // namespace tleak::diagnosis
