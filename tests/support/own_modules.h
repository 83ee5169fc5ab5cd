// This process's modules as a recording of it would give them (no build ids: none to check), for
// the tests of what symbolizes a recorded module map, and the comparison of two frames they make.
#pragma once

#include <gtest/gtest.h>

#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tleak/symbolizer.h"

namespace tleak::testing {

inline std::vector<ModuleInfo> own_modules() {
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

// A frame resolved through a recorded map reads exactly as one resolved another way.
inline void expect_same_frame(const Frame& frame, const Frame& expected) {
  EXPECT_EQ(frame.function, expected.function);
  EXPECT_EQ(frame.module, expected.module);
  EXPECT_EQ(frame.file, expected.file);
  EXPECT_EQ(frame.line, expected.line);
  EXPECT_EQ(frame.module_offset, expected.module_offset);
}

}  // namespace tleak::testing
