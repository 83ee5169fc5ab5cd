#include "tleak/symbolizer.h"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

namespace tleak {

std::string demangle(const char* symbol) {
  if (symbol == nullptr) return "??";
  int status = 0;
  char* readable = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
  if (status != 0 || readable == nullptr) return symbol;
  std::string result(readable);
  std::free(readable);
  return result;
}

// libdw's view of this process's modules (executable and shared objects) and their DWARF.
struct Symbolizer::Dwarf {
  Dwfl_Callbacks callbacks{};
  Dwfl* dwfl = nullptr;
  char* debuginfo_path = nullptr;

  Dwarf() {
    callbacks.find_elf = dwfl_linux_proc_find_elf;
    callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
    callbacks.debuginfo_path = &debuginfo_path;
    dwfl = dwfl_begin(&callbacks);
    report();
  }
  ~Dwarf() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
  // (Re)reads /proc/self/maps, picking up objects loaded since the last report.
  void report() {
    if (dwfl == nullptr) return;
    dwfl_report_begin(dwfl);
    dwfl_linux_proc_report(dwfl, getpid());
    dwfl_report_end(dwfl, nullptr, nullptr);
  }
};

Symbolizer::Symbolizer() : dwarf_(std::make_unique<Dwarf>()) {}
Symbolizer::~Symbolizer() = default;

const Frame& Symbolizer::symbolize(std::uintptr_t return_address) {
  if (const auto hit = cache_.find(return_address); hit != cache_.end()) return hit->second;

  Frame frame;
  frame.address = return_address;
  frame.function = "??";
  // The call instruction ends one byte before the return address.
  const Dwarf_Addr pc = return_address - 1;
  Dwfl_Module* module = dwarf_->dwfl ? dwfl_addrmodule(dwarf_->dwfl, pc) : nullptr;
  if (module == nullptr && dwarf_->dwfl != nullptr) {
    dwarf_->report();
    module = dwfl_addrmodule(dwarf_->dwfl, pc);
  }
  if (module != nullptr) {
    Dwarf_Addr base = 0;
    const char* path = dwfl_module_info(module, nullptr, &base, nullptr, nullptr, nullptr,
                                        nullptr, nullptr);
    if (path != nullptr) {
      const std::string_view full(path);
      const auto slash = full.rfind('/');
      frame.module = std::string(slash == std::string_view::npos ? full : full.substr(slash + 1));
    }
    frame.module_offset = return_address - base;
    if (const char* name = dwfl_module_addrname(module, pc)) frame.function = demangle(name);
    if (Dwfl_Line* line = dwfl_module_getsrc(module, pc)) {
      int line_number = 0;
      if (const char* file = dwfl_lineinfo(line, nullptr, &line_number, nullptr, nullptr, nullptr)) {
        frame.file = file;
        frame.line = line_number;
      }
    }
  }
  return cache_.emplace(return_address, std::move(frame)).first->second;
}

std::vector<Frame> Symbolizer::symbolize(std::span<const std::uintptr_t> return_addresses) {
  std::vector<Frame> frames;
  frames.reserve(return_addresses.size());
  for (std::uintptr_t address : return_addresses) frames.push_back(symbolize(address));
  return frames;
}

}  // namespace tleak
