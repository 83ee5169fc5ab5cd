// Turns return addresses into frames a person can read: demangled function, module, and file:line
// where debug info exists. Used only when a report is written, never on the allocation path; each
// distinct address is resolved once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace tleak {

struct Frame {
  std::uintptr_t address = 0;
  std::string function;  // demangled; "??" when no symbol covers the address
  std::string module;    // file name of the executable or shared object, without directories
  std::uintptr_t module_offset = 0;  // address relative to the module's load base
  std::string file;      // source file, empty without debug info
  int line = 0;
};

class Symbolizer {
 public:
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // `return_address` is as captured: the instruction after a call. The call itself is looked up.
  const Frame& symbolize(std::uintptr_t return_address);
  std::vector<Frame> symbolize(std::span<const std::uintptr_t> return_addresses);

 private:
  struct Dwarf;
  std::unique_ptr<Dwarf> dwarf_;
  std::unordered_map<std::uintptr_t, Frame> cache_;
};

// "tleak::Foo::bar(int)" from "_ZN5tleak3Foo3barEi"; the input unchanged if it is not mangled.
std::string demangle(const char* symbol);

}  // namespace tleak
