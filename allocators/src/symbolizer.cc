#include "tleak/symbolizer.h"

#include "local_debuginfo.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

namespace tleak {

const char* frame_kind_name(FrameKind kind) {
  switch (kind) {
    case FrameKind::kNative: return "native";
    case FrameKind::kInlined: return "inlined";
    case FrameKind::kPython: return "python";
  }
  return "native";
}

bool frame_kind_of_name(std::string_view name, FrameKind* kind) {
  for (const FrameKind k : {FrameKind::kNative, FrameKind::kInlined, FrameKind::kPython}) {
    if (name == frame_kind_name(k)) {
      *kind = k;
      return true;
    }
  }
  return false;
}

std::string demangle(const char* symbol) {
  if (symbol == nullptr) return "??";
  // Only a mangled name: __cxa_demangle also reads a type's code, and a C function named `w` or
  // `f` came out as "wchar_t" or "float".
  if (std::strncmp(symbol, "_Z", 2) != 0) return symbol;
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
  bool own_process = true;

  Dwarf() {
    callbacks.find_elf = dwfl_linux_proc_find_elf;
    callbacks.find_debuginfo = find_local_debuginfo;
    callbacks.debuginfo_path = &debuginfo_path;
    dwfl = dwfl_begin(&callbacks);
    report();
  }
  explicit Dwarf(const std::vector<ModuleInfo>& modules) : own_process(false) {
    callbacks.find_elf = dwfl_build_id_find_elf;
    callbacks.find_debuginfo = find_local_debuginfo;
    callbacks.section_address = dwfl_offline_section_address;
    callbacks.debuginfo_path = &debuginfo_path;
    dwfl = dwfl_begin(&callbacks);
    add(modules);
  }
  // Reports the modules not reported yet (same path at the same place).
  void add(const std::vector<ModuleInfo>& modules) {
    if (dwfl == nullptr || own_process) return;
    dwfl_report_begin_add(dwfl);
    for (const ModuleInfo& m : modules) {
      if (m.path.empty() || m.path[0] != '/') continue;  // the vdso and anything not on disk
      if (!reported.emplace(m.start, m.path).second) continue;
      Dwfl_Module* module = dwfl_report_elf(dwfl, m.path.c_str(), m.path.c_str(), -1, m.load_bias, false);
      if (module == nullptr) {
        // Gone since the run, unreadable, or tleak out of descriptors: its frames say which.
        unopened.push_back({m, dwfl_errmsg(-1)});
        continue;
      }
      if (!m.build_id.empty()) {
        const unsigned char* bits = nullptr;
        GElf_Addr vaddr = 0;
        const int n = dwfl_module_build_id(module, &bits, &vaddr);
        if (n > 0 && std::string_view(reinterpret_cast<const char*>(bits), static_cast<std::size_t>(n)) != m.build_id) {
          // Rebuilt since the run: its symbols would name the wrong code (symbolize() skips it).
          stale.push_back(m);
          continue;
        }
      }
      unprepared.push_back(module);
    }
    dwfl_report_end(dwfl, nullptr, nullptr);
  }
  // Reads one module's symbol table and debug info, the slow part of its first lookup.
  bool prepare_next() {
    while (!unprepared.empty()) {
      Dwfl_Module* module = unprepared.front();
      unprepared.pop_front();
      Dwarf_Addr base = 0;
      if (dwfl_module_info(module, nullptr, &base, nullptr, nullptr, nullptr, nullptr, nullptr) == nullptr) continue;
      symbol_table(module);
      Dwarf_Addr bias = 0;
      dwfl_module_getdwarf(module, &bias);
      return true;
    }
    return false;
  }
  std::set<std::pair<std::uintptr_t, std::string>> reported;  // (start, path)
  std::deque<Dwfl_Module*> unprepared;
  std::vector<ModuleInfo> stale;
  struct Unopened {
    ModuleInfo module;
    std::string why;
  };
  std::vector<Unopened> unopened;

  // libdw finds a symbol by scanning the whole symbol table each time; a program's report asks for
  // thousands of addresses in the same few modules. Each module's function symbols, sorted once.
  struct Symbol {
    GElf_Addr start, end;
    const char* name;
  };
  std::unordered_map<Dwfl_Module*, std::vector<Symbol>> symbols;

  // The module's function symbols by address, read on first use.
  const std::vector<Symbol>& symbol_table(Dwfl_Module* module) {
    auto [it, fresh] = symbols.try_emplace(module);
    std::vector<Symbol>& table = it->second;
    if (fresh) {
      const int n = dwfl_module_getsymtab(module);
      for (int i = 1; i < n; ++i) {
        GElf_Sym sym;
        GElf_Addr address = 0;
        const char* name = dwfl_module_getsym_info(module, i, &sym, &address, nullptr, nullptr, nullptr);
        if (name == nullptr || *name == '\0' || GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF) continue;
        table.push_back({address, address + std::max<GElf_Xword>(sym.st_size, 1), name});
      }
      std::sort(table.begin(), table.end(), [](const Symbol& a, const Symbol& b) { return a.start < b.start; });
    }
    return table;
  }

  const char* function_at(Dwfl_Module* module, GElf_Addr pc) {
    const std::vector<Symbol>& table = symbol_table(module);
    auto after = std::upper_bound(table.begin(), table.end(), pc,
                                  [](GElf_Addr value, const Symbol& s) { return value < s.start; });
    // The innermost symbol covering pc: scan back over the few that start before it.
    for (int tries = 0; after != table.begin() && tries < 8; ++tries) {
      --after;
      if (pc < after->end) return after->name;
    }
    return nullptr;
  }
  // Whether the code at `address` is the C library's signal trampoline (__restore_rt, a local
  // symbol that no dynamic symbol table names): where a handler returns to, so the frame of the
  // kernel's signal frame, named as gdb names it. Its bytes are what libunwind checks too:
  // mov $15, %rax (rt_sigreturn); syscall.
  bool signal_return_at(Dwfl_Module* module, Dwarf_Addr address) {
    static constexpr unsigned char kRestore[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    Dwarf_Addr bias = 0;
    Elf_Scn* section = dwfl_module_address_section(module, &address, &bias);
    if (section == nullptr) return false;
    Elf_Data* data = elf_getdata(section, nullptr);
    if (data == nullptr || data->d_buf == nullptr || address > data->d_size ||
        data->d_size - address < sizeof kRestore) {
      return false;
    }
    return std::memcmp(static_cast<const unsigned char*>(data->d_buf) + address, kRestore, sizeof kRestore) == 0;
  }
  // libdw finds a line's compile unit through .debug_aranges, which clang does not emit (and
  // elfutils 0.188 does not fall back without it): every address of a clang-built module reads
  // "out of range". The module's compile units by address range, read once from their own ranges,
  // answer instead.
  struct UnitRange {
    Dwarf_Addr begin, end;
    Dwarf_Die unit;
  };
  std::unordered_map<Dwfl_Module*, std::vector<UnitRange>> unit_ranges;

  // The compile unit holding `pc` (a module-relative address as dwfl gives it) and the address
  // within the module's DWARF, or false.
  bool unit_at(Dwfl_Module* module, Dwarf_Addr pc, Dwarf_Die* unit_out, Dwarf_Addr* address_out) {
    Dwarf_Addr bias = 0;
    if (Dwarf_Die* unit = dwfl_module_addrdie(module, pc, &bias)) {
      *unit_out = *unit;
      *address_out = pc - bias;
      return true;
    }
    auto [it, fresh] = unit_ranges.try_emplace(module);
    std::vector<UnitRange>& table = it->second;
    if (fresh) {
      Dwarf_Die* unit = nullptr;
      while ((unit = dwfl_module_nextcu(module, unit, &bias)) != nullptr) {
        Dwarf_Addr base = 0, begin = 0, end = 0;
        for (ptrdiff_t offset = 0; (offset = dwarf_ranges(unit, offset, &base, &begin, &end)) > 0;) {
          if (begin < end) table.push_back({begin, end, *unit});
        }
      }
      std::sort(table.begin(), table.end(), [](const UnitRange& a, const UnitRange& b) { return a.begin < b.begin; });
    }
    if (table.empty() || dwfl_module_getdwarf(module, &bias) == nullptr) return false;
    const Dwarf_Addr address = pc - bias;
    auto after = std::upper_bound(table.begin(), table.end(), address,
                                  [](Dwarf_Addr value, const UnitRange& r) { return value < r.begin; });
    if (after == table.begin() || address >= std::prev(after)->end) return false;
    *unit_out = std::prev(after)->unit;
    *address_out = address;
    return true;
  }

  // The out-of-line functions of each compile unit by address: where a frame's own function is.
  struct FunctionRange {
    Dwarf_Addr begin, end;
    Dwarf_Die function;
  };
  // A DIE's place: offsets are the module's own (every module's first unit is at the same one).
  using DieKey = std::pair<const ::Dwarf*, Dwarf_Off>;
  static DieKey key_of(Dwarf_Die* die) { return {dwarf_cu_getdwarf(die->cu), dwarf_dieoffset(die)}; }
  std::map<DieKey, std::vector<FunctionRange>> unit_functions;  // by the unit

  static void collect_functions(Dwarf_Die* parent, std::vector<FunctionRange>& out) {
    Dwarf_Die child;
    if (dwarf_child(parent, &child) != 0) return;
    do {
      const int tag = dwarf_tag(&child);
      if (tag == DW_TAG_subprogram) {
        Dwarf_Addr base = 0, begin = 0, end = 0;
        for (ptrdiff_t offset = 0; (offset = dwarf_ranges(&child, offset, &base, &begin, &end)) > 0;) {
          if (begin < end) out.push_back({begin, end, child});
        }
      } else if (tag == DW_TAG_namespace || tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
                 tag == DW_TAG_union_type || tag == DW_TAG_module) {
        collect_functions(&child, out);  // C++ may define functions inside these
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  // The inlined calls inside `scope` that hold `address` (through lexical blocks), outermost
  // first.
  static void inlined_calls(Dwarf_Die* scope, Dwarf_Addr address, std::vector<Dwarf_Die>& calls) {
    Dwarf_Die child;
    if (dwarf_child(scope, &child) != 0) return;
    do {
      const int tag = dwarf_tag(&child);
      if ((tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block) && dwarf_haspc(&child, address) > 0) {
        if (tag == DW_TAG_inlined_subroutine) calls.push_back(child);
        inlined_calls(&child, address, calls);
        return;
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  // The out-of-line function of `unit` holding `address`, or false.
  bool function_holding(Dwarf_Die* unit, Dwarf_Addr address, Dwarf_Die* function) {
    auto [it, fresh] = unit_functions.try_emplace(key_of(unit));
    std::vector<FunctionRange>& functions = it->second;
    if (fresh) {
      collect_functions(unit, functions);
      std::sort(functions.begin(), functions.end(),
                [](const FunctionRange& a, const FunctionRange& b) { return a.begin < b.begin; });
    }
    auto after = std::upper_bound(functions.begin(), functions.end(), address,
                                  [](Dwarf_Addr value, const FunctionRange& r) { return value < r.begin; });
    if (after == functions.begin() || address >= std::prev(after)->end) return false;
    *function = std::prev(after)->function;
    return true;
  }

  // Where the inlined call `call` was made: its file, line and column (0 where the compiler gave
  // none) in the code it was inlined into.
  static bool call_site(Dwarf_Die* unit, Dwarf_Die* call, std::string& file, int& line, int& column) {
    Dwarf_Attribute attribute;
    Dwarf_Word call_line = 0, call_file = 0, call_column = 0;
    Dwarf_Files* files = nullptr;
    std::size_t file_count = 0;
    if (dwarf_formudata(dwarf_attr(call, DW_AT_call_line, &attribute), &call_line) != 0 ||
        dwarf_formudata(dwarf_attr(call, DW_AT_call_file, &attribute), &call_file) != 0 || call_line == 0 ||
        dwarf_getsrcfiles(unit, &files, &file_count) != 0 || call_file >= file_count) {
      return false;
    }
    const char* name = dwarf_filesrc(files, call_file, nullptr, nullptr);
    if (name == nullptr) return false;
    file = name;
    line = static_cast<int>(call_line);
    if (dwarf_formudata(dwarf_attr(call, DW_AT_call_column, &attribute), &call_column) != 0 || call_column > kMaxNativeColumn) {
      call_column = 0;
    }
    column = static_cast<int>(call_column);
    return true;
  }

  // The function an inlined call inlined: its linkage name demangled, else its own name within the
  // scopes that declare it ("std::thread::thread": a constructor, or a lambda's "operator()", has
  // no linkage name there, and "thread" alone would be taken for the program's own code).
  std::string inlined_function(Dwarf_Die* call) {
    Dwarf_Attribute attribute;
    for (const int name : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
      if (const char* linkage = dwarf_formstring(dwarf_attr_integrate(call, name, &attribute))) return demangle(linkage);
    }
    Dwarf_Die declaration = declaration_of(*call);
    auto [it, fresh] = declared_names.try_emplace(key_of(&declaration));
    if (fresh) it->second = scoped_name(&declaration);
    return it->second;
  }

  // Where a function is declared: through an inlined call's (or an abstract instance's) origin and
  // an out-of-line definition's specification.
  static Dwarf_Die declaration_of(Dwarf_Die die) {
    for (int hops = 0; hops < 4; ++hops) {
      Dwarf_Attribute attribute;
      Dwarf_Die next;
      if (dwarf_formref_die(dwarf_attr(&die, DW_AT_abstract_origin, &attribute), &next) == nullptr &&
          dwarf_formref_die(dwarf_attr(&die, DW_AT_specification, &attribute), &next) == nullptr) {
        break;
      }
      die = next;
    }
    return die;
  }

  // A declaration's name within its namespaces, classes and functions.
  std::string scoped_name(Dwarf_Die* declaration) {
    const char* own = dwarf_diename(declaration);
    std::string name = own != nullptr ? own : "??";
    Dwarf_Die unit;
    if (dwarf_diecu(declaration, &unit, nullptr, nullptr) == nullptr) return name;
    const std::map<Dwarf_Off, Dwarf_Die>& parent = scope_parents(&unit);
    bool innermost = true;
    for (auto up = parent.find(dwarf_dieoffset(declaration)); up != parent.end(); innermost = false) {
      Dwarf_Die scope = up->second;
      // A lambda's closure type is declared in the out-of-line definition of the function that
      // holds it, which names its own declaration, in its class and namespaces: the climb goes on
      // from there.
      if (dwarf_tag(&scope) == DW_TAG_subprogram) scope = declaration_of(scope);
      up = parent.find(dwarf_dieoffset(&scope));
      const int tag = dwarf_tag(&scope);
      const char* scope_name = dwarf_diename(&scope);
      if (tag == DW_TAG_namespace) {
        name = std::string(scope_name != nullptr ? scope_name : "(anonymous namespace)") + "::" + name;
      } else if (tag == DW_TAG_class_type || tag == DW_TAG_structure_type || tag == DW_TAG_union_type) {
        // An unnamed class whose member is "operator()" is a lambda's closure type.
        const char* unnamed = innermost && name == "operator()" ? "{lambda}" : "{unnamed type}";
        name = std::string(scope_name != nullptr ? scope_name : unnamed) + "::" + name;
      } else if (tag == DW_TAG_subprogram && scope_name != nullptr) {
        name = std::string(scope_name) + "::" + name;
      }
    }
    return name;
  }
  std::map<DieKey, std::string> declared_names;  // by the declaration

  // The scope each function and scope of a unit is declared in (libdw keeps no parents; asking
  // dwarf_getscopes_die walked the unit from its top for each declaration, 0.65 ms each in a large
  // C++ unit): by the declared DIE's offset, from one walk of the unit the first time it is asked.
  const std::map<Dwarf_Off, Dwarf_Die>& scope_parents(Dwarf_Die* unit) {
    auto [it, fresh] = unit_scope_parents.try_emplace(key_of(unit));
    if (fresh) collect_scope_parents(unit, nullptr, it->second);
    return it->second;
  }
  static bool declares_functions(int tag) {
    return tag == DW_TAG_namespace || tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
           tag == DW_TAG_union_type || tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block;
  }
  // What `die` holds, declared in `scope`: the named scope around it (null at the unit's top). A
  // lexical block (a lambda's closure type inside a function's block) names nothing: what it holds
  // is declared in the scope around it.
  static void collect_scope_parents(Dwarf_Die* die, const Dwarf_Die* scope, std::map<Dwarf_Off, Dwarf_Die>& parent) {
    Dwarf_Die child;
    if (dwarf_child(die, &child) != 0) return;
    do {
      const int tag = dwarf_tag(&child);
      if (!declares_functions(tag)) continue;
      if (tag == DW_TAG_lexical_block) {
        collect_scope_parents(&child, scope, parent);
        continue;
      }
      if (scope != nullptr) parent.emplace(dwarf_dieoffset(&child), *scope);
      collect_scope_parents(&child, &child, parent);
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  std::map<DieKey, std::map<Dwarf_Off, Dwarf_Die>> unit_scope_parents;  // by the unit

  // File and line of `pc` (a module-relative address as dwfl gives it), and the functions inlined
  // there. `frame` (its function named by the symbol table) gets the line where its function called
  // the outermost inlined one; each inlined frame, innermost first into `inlined`, the line where it
  // called the next, and the innermost the line table's. (The line table names only the innermost
  // code's line, an allocator's or a container's in a library header, while a reader looks for the
  // lines of their own functions that led there.)
  void lines_at(Dwfl_Module* module, Dwarf_Addr pc, Frame& frame, std::vector<Frame>& inlined) {
    Dwarf_Die unit;
    Dwarf_Addr address = 0;
    if (!unit_at(module, pc, &unit, &address)) return;
    std::vector<Dwarf_Die> calls;
    if (Dwarf_Die function; function_holding(&unit, address, &function)) inlined_calls(&function, address, calls);
    // The innermost code's line, from the line table.
    std::string file;
    int line = 0, column = 0;
    Dwarf_Line* found = dwarf_getsrc_die(&unit, address);
    const char* name = found == nullptr ? nullptr : dwarf_linesrc(found, nullptr, nullptr);
    if (name != nullptr && dwarf_lineno(found, &line) == 0) {
      file = name;
      if (dwarf_linecol(found, &column) != 0 || column < 0 || column > kMaxNativeColumn) column = 0;
    }
    for (std::size_t i = calls.size(); i-- > 0;) {
      Frame callee = frame;
      callee.kind = FrameKind::kInlined;
      callee.function = inlined_function(&calls[i]);
      callee.file = file;
      callee.line = line;
      callee.column = column;
      inlined.push_back(std::move(callee));
      // Without its call site, the caller keeps the callee's line: near, rather than none.
      if (!call_site(&unit, &calls[i], file, line, column)) column = 0;
    }
    frame.file = file;
    frame.line = line;
    frame.column = column;
  }

  ~Dwarf() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
  // (Re)reads /proc/self/maps, picking up objects loaded since the last report.
  void report() {
    if (dwfl == nullptr || !own_process) return;
    dwfl_report_begin(dwfl);
    dwfl_linux_proc_report(dwfl, getpid());
    dwfl_report_end(dwfl, nullptr, nullptr);
  }
};

Symbolizer::Symbolizer() : dwarf_(std::make_unique<Dwarf>()) {}
Symbolizer::Symbolizer(const std::vector<ModuleInfo>& modules) : dwarf_(std::make_unique<Dwarf>(modules)) {}
Symbolizer::~Symbolizer() = default;

void Symbolizer::add_modules(const std::vector<ModuleInfo>& modules) { dwarf_->add(modules); }

bool Symbolizer::prepare_next_module() { return dwarf_->prepare_next(); }

bool Symbolizer::all_modules_prepared() const { return dwarf_->unprepared.empty(); }

const Frame& Symbolizer::symbolize(std::uintptr_t return_address) {
  return resolve(return_address).frame;
}

void Symbolizer::append_frames(std::uintptr_t return_address, std::vector<Frame>& stack) {
  const Resolved& resolved = resolve(return_address);
  stack.insert(stack.end(), resolved.inlined.begin(), resolved.inlined.end());
  stack.push_back(resolved.frame);
}

void Symbolizer::append_frames_where_stopped(std::uintptr_t address, std::vector<Frame>& stack) {
  // Resolved as the return address one past it would be (whose call is looked up): the same
  // instruction, and the same cache. The frames keep the address itself.
  const std::size_t first = stack.size();
  append_frames(address + 1, stack);
  for (std::size_t i = first; i < stack.size(); ++i) {
    stack[i].address = address;
    if (!stack[i].module.empty()) --stack[i].module_offset;
  }
}

const Symbolizer::Resolved& Symbolizer::resolve(std::uintptr_t return_address) {
  if (const auto hit = cache_.find(return_address); hit != cache_.end()) return hit->second;

  Resolved resolved;
  Frame& frame = resolved.frame;
  frame.address = return_address;
  frame.function = "??";
  // The call instruction ends one byte before the return address.
  const Dwarf_Addr pc = return_address - 1;
  Dwfl_Module* module = dwarf_->dwfl ? dwfl_addrmodule(dwarf_->dwfl, pc) : nullptr;
  if (module == nullptr && dwarf_->dwfl != nullptr && dwarf_->own_process) {
    dwarf_->report();
    module = dwfl_addrmodule(dwarf_->dwfl, pc);
  }
  // A module whose symbols cannot be read: named, with the reason, rather than a bare "??".
  const auto unnamed = [&](const ModuleInfo& m, const std::string& why) {
    const auto slash = m.path.rfind('/');
    frame.module = m.path.substr(slash == std::string::npos ? 0 : slash + 1);
    frame.module_offset = return_address - m.load_bias;
    frame.function = "?? (" + frame.module + " " + why + ")";
    module = nullptr;
  };
  for (const ModuleInfo& m : dwarf_->stale) {
    if (pc >= m.start && pc < m.end) unnamed(m, "changed since the run");
  }
  if (module == nullptr) {
    for (const auto& [m, why] : dwarf_->unopened) {
      if (pc >= m.start && pc < m.end) unnamed(m, "could not be opened: " + why);
    }
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
    if (const char* name = dwarf_->function_at(module, pc)) {
      frame.function = demangle(name);
      dwarf_->lines_at(module, pc, frame, resolved.inlined);
    } else if (dwarf_->signal_return_at(module, return_address)) {
      // A handler's return: not a call, so the address itself is the trampoline's first byte.
      frame.function = kSignalFrameName;
    } else {
      dwarf_->lines_at(module, pc, frame, resolved.inlined);
    }
  }
  return cache_.emplace(return_address, std::move(resolved)).first->second;
}

std::vector<Frame> Symbolizer::symbolize(std::span<const std::uintptr_t> return_addresses) {
  std::vector<Frame> frames;
  frames.reserve(return_addresses.size());
  for (std::uintptr_t address : return_addresses) frames.push_back(symbolize(address));
  return frames;
}

}  // namespace tleak
