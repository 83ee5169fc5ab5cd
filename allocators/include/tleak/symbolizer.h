// Turns return addresses into frames a person can read: demangled function, module, and file:line
// where debug info exists. Used only when a report is written, never on the allocation path; each
// distinct address is resolved once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tleak {

// What a frame stands for: a return address; a function the compiler inlined into the next frame,
// at the same address (its line is where it called the frame before it); or a frame of the Python
// interpreter's stack (then module and file are the script). Reports name it (frame_kind_name).
enum class FrameKind : std::uint8_t { kNative, kInlined, kPython };
// "native", "inlined", "python": a report's names.
const char* frame_kind_name(FrameKind kind);
// The kind a report's name stands for; false for a name that is none of the three.
bool frame_kind_of_name(std::string_view name, FrameKind* kind);

// The function of the frame a signal handler returns to (the kernel's signal frame), as gdb names it.
inline constexpr const char* kSignalFrameName = "<signal handler called>";

struct Frame {
  std::uintptr_t address = 0;
  std::string function;  // demangled; "??" when no symbol covers the address
  std::string module;    // file name of the executable or shared object, without directories
  std::uintptr_t module_offset = 0;  // address relative to the module's load base
  std::string file;      // source file, empty without debug info
  int line = 0;
  FrameKind kind = FrameKind::kNative;
  // A Python frame's expression on its line, in bytes counted from 1, the end one past its last
  // byte (SARIF's convention); 0: not known. Two calls on one line are two frames of one line, told
  // apart only here. A native or inlined frame has the column its debug info gives for the call
  // (the line table's, or an inlined call's DW_AT_call_column), and no end.
  int column = 0;
  int end_column = 0;
};

// The largest column the symbolizer gives a native frame (a report's range: report_json.h); debug
// info claiming more is taken as none.
inline constexpr int kMaxNativeColumn = 1 << 20;

// A loaded object of a process as recorded while it ran, so that its addresses can be resolved
// after it is gone.
struct ModuleInfo {
  std::string path;
  std::uintptr_t start = 0, end = 0;  // mapped range
  std::uintptr_t load_bias = 0;        // run-time address minus file virtual address
  std::string build_id;                // raw bytes; empty when the object has none
};

class Symbolizer {
 public:
  // This process's own modules, read from /proc/self/maps as they are now.
  Symbolizer();
  // Another process's modules, from its recorded map; files are read from disk. An object whose
  // file changed since (another build id) is not used: its frames keep only the module name.
  explicit Symbolizer(const std::vector<ModuleInfo>& modules);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Adds modules a recorded process loaded since (those already known are skipped).
  void add_modules(const std::vector<ModuleInfo>& modules);
  // Reads the next added module's symbol table and debug info ahead of the first address in it,
  // the slow part of resolving (libdw decompresses a separate debug file whole); false when every
  // module is read. Lookups read a module themselves when it is not.
  bool prepare_next_module();
  // Whether every module added so far has been read.
  bool all_modules_prepared() const;

  // `return_address` is as captured: the instruction after a call. The call itself is looked up.
  const Frame& symbolize(std::uintptr_t return_address);
  std::vector<Frame> symbolize(std::span<const std::uintptr_t> return_addresses);
  // Appends what `return_address` stands for in a stack: the functions the compiler inlined there,
  // as its debug info says, innermost first (frames of kind FrameKind::kInlined), then symbolize()'s frame.
  void append_frames(std::uintptr_t return_address, std::vector<Frame>& stack);
  // The same for an address where a frame stopped rather than where a call returns (the frame a
  // signal interrupted, below the kernel's signal frame): the instruction itself is looked up.
  void append_frames_where_stopped(std::uintptr_t address, std::vector<Frame>& stack);

 private:
  struct Dwarf;
  struct Resolved {
    Frame frame;
    std::vector<Frame> inlined;
  };
  const Resolved& resolve(std::uintptr_t return_address);

  std::unique_ptr<Dwarf> dwarf_;
  std::unordered_map<std::uintptr_t, Resolved> cache_;
};

// "tleak::Foo::bar(int)" from "_ZN5tleak3Foo3barEi"; the input unchanged if it is not mangled.
std::string demangle(const char* symbol);

}  // namespace tleak
