#include "module_preparer.h"

#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace tleak::diagnosis {
namespace {

[[gnu::noinline]] std::uintptr_t return_address_into_this_test() {
  return reinterpret_cast<std::uintptr_t>(__builtin_return_address(0));
}

// This process's modules as the agent would record them (no build ids: none to check).
std::vector<ModuleInfo> own_modules() {
  std::vector<ModuleInfo> modules;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        ModuleInfo m;
        m.path = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (m.path.empty()) {
          char exe[4096] = {};
          const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
          m.path = std::string(exe, n > 0 ? static_cast<std::size_t>(n) : 0);
        }
        m.load_bias = info->dlpi_addr;
        m.start = ~std::uintptr_t{0};
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          if (info->dlpi_phdr[i].p_type != PT_LOAD) continue;
          const std::uintptr_t begin = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
          m.start = std::min(m.start, begin);
          m.end = std::max(m.end, begin + info->dlpi_phdr[i].p_memsz);
        }
        static_cast<std::vector<ModuleInfo>*>(out)->push_back(m);
        return 0;
      },
      &modules);
  return modules;
}

// The map arrives in pieces while the thread reads (as a program loads libraries), and the
// symbolizer handed over at the end resolves as one made from the final map at once.
TEST(ModulePreparer, HandsOverASymbolizerOfTheWholeMap) {
  const std::uintptr_t address = return_address_into_this_test();
  const std::vector<ModuleInfo> modules = own_modules();
  ASSERT_GT(modules.size(), 2u);
  Symbolizer at_once(modules);
  const Frame expected = at_once.symbolize(address);
  ASSERT_TRUE(expected.file.ends_with("module_preparer_test.cc")) << expected.file;

  ModulePreparer preparer;
  for (std::size_t n = 1; n <= modules.size(); ++n) preparer.add_modules({modules.begin(), modules.begin() + n});
  std::unique_ptr<Symbolizer> handed = preparer.finish(modules);
  ASSERT_NE(handed, nullptr);
  const Frame& frame = handed->symbolize(address);
  EXPECT_EQ(frame.function, expected.function);
  EXPECT_EQ(frame.file, expected.file);
  EXPECT_EQ(frame.line, expected.line);
  EXPECT_EQ(frame.module, expected.module);
}

// Stopped at once, or destroyed without finish(): no hang, no work left behind.
TEST(ModulePreparer, StopsAndEndsAtAnyMoment) {
  const std::vector<ModuleInfo> modules = own_modules();
  for (int i = 0; i < 20; ++i) {
    ModulePreparer preparer;
    preparer.add_modules(modules);
    if (i % 2 == 0) preparer.stop();
  }
  ModulePreparer unused;
  EXPECT_NE(unused.finish({}), nullptr);
}

}  // namespace
}  // namespace tleak::diagnosis
