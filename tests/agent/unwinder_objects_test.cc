// The agent's answer to libunwind's search of the loaded objects (unwinder_objects.h) against the
// C library's own walk: the same object found for every address, in any order, across a load and
// an unload.
#include "unwinder_objects.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace tleak::agent {
namespace {

// As libunwind's callback does: accepts the object whose loaded segments hold the address.
struct Search {
  std::uintptr_t address;
  std::string found;
  int objects_asked = 0;
};

int holds_address(dl_phdr_info* info, std::size_t, void* arg) {
  auto* search = static_cast<Search*>(arg);
  ++search->objects_asked;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && search->address >= start && search->address < start + ph.p_memsz) {
      search->found = info->dlpi_name != nullptr ? info->dlpi_name : "";
      return 1;
    }
  }
  return 0;
}

std::string by_list(std::uintptr_t address, int* asked = nullptr) {
  Search search{address, "(none)"};
  const int result = unwinder_iterate_objects(holds_address, &search);
  if (asked != nullptr) *asked = search.objects_asked;
  return result != 0 ? search.found : "(none)";
}

std::string by_c_library(std::uintptr_t address) {
  Search search{address, "(none)"};
  return dl_iterate_phdr(holds_address, &search) != 0 ? search.found : "(none)";
}

std::vector<std::uintptr_t> addresses_in_several_objects() {
  return {reinterpret_cast<std::uintptr_t>(&by_list),                       // this test program
          reinterpret_cast<std::uintptr_t>(&std::strlen),                   // the C library
          reinterpret_cast<std::uintptr_t>(static_cast<double (*)(double)>(&std::cos)),  // libm
          reinterpret_cast<std::uintptr_t>(&dlopen),
          reinterpret_cast<std::uintptr_t>(&testing::UnitTest::GetInstance),  // gtest
          reinterpret_cast<std::uintptr_t>(&std::malloc),
          std::uintptr_t{0x10}};                                             // in no object
}

TEST(UnwinderObjects, FindsWhatTheCLibrarysWalkFindsInAnyOrder) {
  const std::vector<std::uintptr_t> addresses = addresses_in_several_objects();
  for (int round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < addresses.size(); ++i) {
      const std::uintptr_t address = addresses[(i * 5 + round) % addresses.size()];
      EXPECT_EQ(by_list(address), by_c_library(address)) << std::hex << address;
    }
  }
}

TEST(UnwinderObjects, AsksTheObjectFoundLastFirst) {
  const auto address = reinterpret_cast<std::uintptr_t>(&std::strlen);
  by_list(address);
  int asked = 0;
  EXPECT_EQ(by_list(address, &asked), by_c_library(address));
  EXPECT_EQ(asked, 1);
}

TEST(UnwinderObjects, FollowsALoadAndAnUnload) {
  void* plugin = dlopen(TLEAK_TEST_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(plugin, nullptr) << dlerror();
  const auto in_plugin = reinterpret_cast<std::uintptr_t>(dlsym(plugin, "plugin_make"));
  ASSERT_NE(in_plugin, 0u);
  by_list(reinterpret_cast<std::uintptr_t>(&std::strlen));  // a list made before the load is stale
  EXPECT_EQ(by_list(in_plugin), by_c_library(in_plugin));
  EXPECT_NE(by_list(in_plugin).find("dlopen_plugin"), std::string::npos);
  ASSERT_EQ(dlclose(plugin), 0);
  EXPECT_EQ(by_list(in_plugin), by_c_library(in_plugin));  // gone: in no object, or in another loaded there
  EXPECT_EQ(by_list(reinterpret_cast<std::uintptr_t>(&std::strlen)), by_c_library(reinterpret_cast<std::uintptr_t>(&std::strlen)));
}

}  // namespace
}  // namespace tleak::agent
