#include "python_frames.h"

#include <dlfcn.h>
#include <errno.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <initializer_list>

#include "command_line.h"
#include "python_layout.h"
#include "tleak/agent/protocol.h"
#include "tleak/agent/python_files.h"

namespace tleak::agent {

std::uint32_t g_code_filename_offset = 0, g_code_qualname_offset = 0;
std::uintptr_t g_eval_start = 0, g_eval_end = 0;
CodeRange g_interpreter_code, g_c_library_code;

namespace {

// The interpreter's call dispatch functions found (python_init), [start, end) each.
struct FunctionRange {
  std::uintptr_t start, end;
};
constexpr const char* kCallDispatchNames[] = {
    "PyObject_Vectorcall", "_PyObject_MakeTpCall", "PyObject_Call",       "_PyObject_Call",
    "PyObject_VectorcallMethod", "PyObject_VectorcallDict", "_PyObject_FastCallDictTstate", "_PyObject_FastCall",
    "PyVectorcall_Call", "_PyFunction_Vectorcall", "_PyObject_Call_Prepend", "PyCFunction_Call",
    "PyObject_CallObject", "PyObject_CallOneArg", "PyObject_CallNoArgs"};
FunctionRange g_call_dispatch[std::size(kCallDispatchNames)];
int g_call_dispatch_count = 0;

// A function's range from its symbol (dladdr1's entry, as for the eval loop); false if unknown.
bool function_range(void* function, FunctionRange* out) {
  Dl_info info;
  void* entry = nullptr;
  if (function == nullptr || dladdr1(function, &info, &entry, RTLD_DL_SYMENT) == 0 || entry == nullptr) return false;
  const auto* symbol = static_cast<const ElfW(Sym)*>(entry);
  out->start = reinterpret_cast<std::uintptr_t>(function);
  out->end = out->start + (symbol->st_size > 0 ? symbol->st_size : 1);
  return true;
}

}  // namespace

bool in_call_dispatch(std::uint64_t return_address) {
  for (int i = 0; i < g_call_dispatch_count; ++i) {
    if (return_address > g_call_dispatch[i].start && return_address <= g_call_dispatch[i].end) return true;
  }
  return false;
}

namespace {

const PythonLayout* g_layout = nullptr;
std::uintptr_t g_runtime = 0;
// The interpreter's own types whose objects' payload the exit scan skips.
std::uintptr_t g_code_type = 0, g_bytes_type = 0, g_str_type = 0, g_type_type = 0;

// A str's form, in its state word: the width of its characters and where they lie.
constexpr std::uint32_t kStrKindShift = 2, kStrCompactBit = 5, kStrAsciiBit = 6, kStrReadyBit = 7;

template <class T>
T read_at(std::uintptr_t address, std::uint32_t offset) {
  T value;
  std::memcpy(&value, reinterpret_cast<const void*>(address + offset), sizeof value);
  return value;
}

// 3.11's location table (Objects/locations.md): variable-length integers in 6-bit groups.
struct LineTableReader {
  const std::uint8_t* p;
  const std::uint8_t* end;
  std::uint32_t varint() {
    std::uint32_t value = 0;
    for (int shift = 0; p < end && shift < 32; shift += 6) {
      const std::uint8_t b = *p++;
      value |= static_cast<std::uint32_t>(b & 63) << shift;
      if ((b & 64) == 0) break;
    }
    return value;
  }
  std::int32_t svarint() {
    const std::uint32_t v = varint();
    return (v & 1) ? -static_cast<std::int32_t>(v >> 1) : static_cast<std::int32_t>(v >> 1);
  }
};

// The line of `instruction` (in code units) in the code object's location table `table`, and the
// columns of its expression into d->column and d->end_column, read on from where `d` found the entry
// before (`d` describes this code, its first line and the table's size included: python_describe)
// when it is not past it, else from the start.
std::int32_t line_of(std::uintptr_t table, std::uint32_t instruction, PythonDescription* d) {
  const PythonLayout& l = *g_layout;
  std::int32_t line = d->first_line;
  d->column = d->end_column = -1;
  const std::int64_t size = d->table_bytes;
  if (table == 0 || size <= 0 || size > (1 << 24)) return line;
  const auto* base = reinterpret_cast<const std::uint8_t*>(table + l.bytes_data);
  LineTableReader r{base, base + size};
  std::uint32_t address = 0;
  if (d->table == table && instruction >= d->entry_address && d->entry_offset < static_cast<std::uint64_t>(size)) {
    r.p = base + d->entry_offset;
    address = d->entry_address;
    line = d->entry_line;
  }
  while (r.p < r.end) {
    const std::uint8_t* entry = r.p;
    const std::int32_t line_before = line;
    const std::uint8_t first = *r.p++;
    const int code_kind = (first >> 3) & 15;
    const std::uint32_t length = (first & 7) + 1;
    bool has_line = true;
    // Columns as CPython's own reader takes them (Objects/codeobject.c): the long form stores each
    // plus one, 0 for none; the short forms hold the start's high bits in the code.
    std::int32_t column = -1, end_column = -1;
    if (code_kind == 15) {
      has_line = false;
    } else if (code_kind == 14) {
      line += r.svarint();
      const std::uint32_t more_lines = r.varint();
      column = static_cast<std::int32_t>(r.varint()) - 1;
      end_column = static_cast<std::int32_t>(r.varint()) - 1;
      if (more_lines != 0) end_column = -1;  // its end is on a later line: unknown on this one
    } else if (code_kind == 13) {
      line += r.svarint();
    } else if (code_kind >= 10) {
      line += code_kind - 10;
      if (r.end - r.p >= 2) {
        column = r.p[0];
        end_column = r.p[1];
      }
      r.p += 2;
    } else {
      if (r.p < r.end) {
        column = (code_kind << 3) | ((*r.p >> 4) & 7);
        end_column = column + (*r.p & 15);
      }
      r.p += 1;
    }
    if (instruction < address + length) {
      d->entry_offset = static_cast<std::uint32_t>(entry - base);
      d->entry_address = address;
      d->entry_line = line_before;
      if (has_line && column >= 0) {
        d->column = column;
        d->end_column = end_column >= column ? end_column : -1;
      }
      return has_line ? line : -1;
    }
    address += length;
  }
  return line;
}

// A str's text as UTF-8 (compact strings only, which is every str a code object holds).
void copy_text(std::uintptr_t object, char* out, std::uint32_t out_bytes) {
  out[0] = '\0';
  if (object == 0 || out_bytes == 0) return;
  const PythonLayout& l = *g_layout;
  const auto length = read_at<std::int64_t>(object, l.unicode_length);
  const auto state = read_at<std::uint32_t>(object, l.unicode_state);
  const std::uint32_t kind = (state >> kStrKindShift) & 7, compact = (state >> kStrCompactBit) & 1,
                      ascii = (state >> kStrAsciiBit) & 1;
  if (!compact || length < 0) return;
  const std::uintptr_t data = object + (ascii ? l.unicode_ascii_data : l.unicode_compact_data);
  std::uint32_t n = 0;
  for (std::int64_t i = 0; i < length; ++i) {
    std::uint32_t c = kind == 1 ? read_at<std::uint8_t>(data, static_cast<std::uint32_t>(i))
                    : kind == 2 ? read_at<std::uint16_t>(data, static_cast<std::uint32_t>(2 * i))
                                : read_at<std::uint32_t>(data, static_cast<std::uint32_t>(4 * i));
    char utf8[4];
    std::uint32_t bytes = 0;
    if (c < 0x80) {
      utf8[bytes++] = static_cast<char>(c);
    } else if (c < 0x800) {
      utf8[bytes++] = static_cast<char>(0xc0 | (c >> 6));
      utf8[bytes++] = static_cast<char>(0x80 | (c & 63));
    } else if (c < 0x10000) {
      utf8[bytes++] = static_cast<char>(0xe0 | (c >> 12));
      utf8[bytes++] = static_cast<char>(0x80 | ((c >> 6) & 63));
      utf8[bytes++] = static_cast<char>(0x80 | (c & 63));
    } else {
      utf8[bytes++] = static_cast<char>(0xf0 | (c >> 18));
      utf8[bytes++] = static_cast<char>(0x80 | ((c >> 12) & 63));
      utf8[bytes++] = static_cast<char>(0x80 | ((c >> 6) & 63));
      utf8[bytes++] = static_cast<char>(0x80 | (c & 63));
    }
    if (n + bytes + 1 > out_bytes) break;
    std::memcpy(out + n, utf8, bytes);
    n += bytes;
  }
  out[n] = '\0';
}

PythonMainCode g_main_code = PythonMainCode::kNone;
std::string_view g_main_target;
bool g_small_objects_unseen = false;
bool g_ignores_environment = false;  // python -E or -I: PYTHONMALLOC not read

}  // namespace

bool python_init() {
  // The interpreter exports these whether it is the executable or libpython.
  void* runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
  void* version = dlsym(RTLD_DEFAULT, "Py_Version");
  void* eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
  void* code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
  void* bytes_type = dlsym(RTLD_DEFAULT, "PyBytes_Type");
  void* str_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
  void* type_type = dlsym(RTLD_DEFAULT, "PyType_Type");
  if (runtime == nullptr || version == nullptr || eval == nullptr || code_type == nullptr ||
      bytes_type == nullptr || str_type == nullptr || type_type == nullptr) {
    return false;
  }
  const auto hex = *static_cast<const unsigned long*>(version);
  if (((hex >> 16) & 0xffff) != kPython311.version) return false;
  FunctionRange eval_range;
  if (!function_range(eval, &eval_range)) return false;
  g_eval_start = eval_range.start;
  g_eval_end = eval_range.end;
  g_interpreter_code = code_range_of(eval);
  g_c_library_code = code_range_of(reinterpret_cast<const void*>(&::abort));
  for (const char* name : kCallDispatchNames) {
    void* function = dlsym(RTLD_DEFAULT, name);
    // The interpreter's own (an extension could define one of these names too).
    if (g_interpreter_code.holds(function) && function_range(function, &g_call_dispatch[g_call_dispatch_count])) {
      ++g_call_dispatch_count;
    }
  }
  const char* allocator = getenv("PYTHONMALLOC");
  g_small_objects_unseen = allocator == nullptr || (std::strcmp(allocator, "malloc") != 0 && std::strcmp(allocator, "malloc_debug") != 0);
  g_runtime = reinterpret_cast<std::uintptr_t>(runtime);
  g_code_type = reinterpret_cast<std::uintptr_t>(code_type);
  g_bytes_type = reinterpret_cast<std::uintptr_t>(bytes_type);
  g_str_type = reinterpret_cast<std::uintptr_t>(str_type);
  g_type_type = reinterpret_cast<std::uintptr_t>(type_type);
  g_layout = &kPython311;
  g_code_filename_offset = g_layout->code_filename;
  g_code_qualname_offset = g_layout->code_qualname;
  return true;
}

void python_read_main_code(std::string_view executable) {
  if (g_layout == nullptr) return;
  const PythonMain main = this_python_main(executable);
  g_ignores_environment = main.ignores_environment;
  g_main_code = main.code;
  g_main_target = main.target;
}

PythonMainCode python_process_main_code() { return g_main_code; }
std::string_view python_process_main_target() { return g_main_target; }

bool python_enabled() { return g_layout != nullptr; }

bool python_small_objects_unseen() { return g_small_objects_unseen || g_ignores_environment; }

bool python_finalizing() {
  return g_layout != nullptr && read_at<std::uintptr_t>(g_runtime, g_layout->runtime_finalizing) != 0;
}

int python_data_only_kinds(DataOnlyKind* out, int max) {
  if (g_layout == nullptr || max < kPythonDataOnlyKinds) return 0;
  const PythonLayout& l = *g_layout;
  // The scan reads an object's size in the word after its type.
  if (l.var_size != 16 || l.unicode_length != 16) return 0;
  int n = 0;
  out[n++] = {.type = g_code_type, .data_offset = l.code_instructions, .unit_bytes = 2};
  out[n++] = {.type = g_bytes_type, .data_offset = l.bytes_data, .unit_bytes = 1, .terminator = 1};
  // A type's flags: high bits set that read as an address on a heap at 0x2000_0000. Only a
  // type with a size of 0 (every built-in one).
  out[n++] = {.type = g_type_type, .data_offset = l.type_flags, .unit_bytes = 8, .fixed_units = 1,
              .when_offset = l.var_size, .when_mask = ~std::uint64_t{0}, .when_value = 0};
  // A compact str: ASCII text after the short header, or 1, 2 or 4-byte characters after the
  // longer one (whose UTF-8 pointer is part of the header, and so still read). Either ends in a
  // NUL character.
  constexpr std::uint64_t compact = 1u << kStrCompactBit, ascii = 1u << kStrAsciiBit,
                          ready = 1u << kStrReadyBit, form = compact | ascii | ready | (7u << kStrKindShift);
  out[n++] = {.type = g_str_type, .data_offset = l.unicode_ascii_data, .unit_bytes = 1, .terminator = 1,
              .ascii = true, .when_offset = l.unicode_state, .when_mask = form,
              .when_value = compact | ascii | ready | (1u << kStrKindShift)};
  for (std::uint32_t width : {1u, 2u, 4u}) {
    out[n++] = {.type = g_str_type, .data_offset = l.unicode_compact_data, .unit_bytes = width,
                .terminator = width, .when_offset = l.unicode_state, .when_mask = form,
                .when_value = compact | ready | (std::uint64_t{width} << kStrKindShift)};
  }
  return n;
}

bool python_object_pools(PoolGeometry* out) {
  if (g_layout == nullptr) return false;
  *out = g_layout->pools;
  return true;
}

namespace {

// The frames from `frame` on, innermost first, into `out` (at most `max`); returns how many, and
// where the walk stopped in `*rest` (0: no frames left).
int walk_frames(std::uintptr_t frame, PythonFrame* out, int max, std::uintptr_t* rest) {
  const PythonLayout& l = *g_layout;
  int n = 0;
  for (; frame != 0 && n < max; frame = read_at<std::uintptr_t>(frame, l.frame_previous)) {
    const auto code = read_at<std::uintptr_t>(frame, l.frame_code);
    const auto prev_instr = read_at<std::uintptr_t>(frame, l.frame_prev_instr);
    const std::uintptr_t first = code + l.code_instructions;
    const bool is_entry = read_at<std::uint8_t>(frame, l.frame_is_entry) != 0;
    // A frame being set up has not run its first traceable instruction: not a frame yet.
    const bool incomplete = read_at<std::uint8_t>(frame, l.frame_owner) != l.owner_generator &&
                            prev_instr < first + 2 * static_cast<std::uintptr_t>(read_at<std::int32_t>(code, l.code_firsttraceable));
    if (code == 0 || (incomplete && !is_entry)) continue;
    if (!incomplete) {
      const std::uintptr_t units = prev_instr >= first ? (prev_instr - first) / 2 : 0;
      out[n++] = {code, static_cast<std::uint32_t>(units > 0xffffffu ? 0xffffffu : units), is_entry};
    } else if (n > 0) {
      out[n - 1].is_entry = true;  // keep the activation boundary
    }
  }
  *rest = frame;
  return n;
}

std::string_view g_focus;  // empty: no --focus

}  // namespace

int python_stack(PythonFrame* out, int max, std::uintptr_t* rest) {
  *rest = 0;
  if (g_layout == nullptr) return 0;
  const PythonLayout& l = *g_layout;
  // This thread's own state: only its own frames are safe to read, and only by itself.
  if (read_at<int>(g_runtime, l.runtime_autotss_initialized) == 0) return 0;
  const auto tstate = reinterpret_cast<std::uintptr_t>(
      pthread_getspecific(read_at<pthread_key_t>(g_runtime, l.runtime_autotss_key)));
  if (tstate == 0) return 0;
  // Once the interpreter is finalizing, it frees every other thread's state
  // (_PyThreadState_DeleteExcept) while such a thread may still run C code and allocate (a daemon
  // thread in a call that released the GIL): only the finalizing thread's state is still its own.
  // The pointers are compared, never the state read. (A thread that passed this check just before
  // finalizing began can still read its state as it is freed: a window of one walk.)
  const auto finalizing = read_at<std::uintptr_t>(g_runtime, l.runtime_finalizing);
  if (finalizing != 0 && finalizing != tstate) return 0;
  if (read_at<unsigned long>(tstate, l.tstate_thread_id) != pthread_self()) return 0;
  const auto cframe = read_at<std::uintptr_t>(tstate, l.tstate_cframe);
  if (cframe == 0) return 0;
  return walk_frames(read_at<std::uintptr_t>(cframe, l.cframe_current_frame), out, max, rest);
}

int python_stack_beyond(PythonFrame* out, int max, std::uintptr_t* rest) {
  if (g_layout == nullptr || *rest == 0) return 0;
  return walk_frames(*rest, out, max, rest);
}

void python_set_focus(const char* prefix) { g_focus = prefix != nullptr ? prefix : ""; }

PythonCodeKind python_code_kind(std::uint64_t code) {
  char file[kMaxPythonFocusBytes + 1];  // a file under a focus begins with all of it
  copy_text(read_at<std::uintptr_t>(code, g_layout->code_filename), file, sizeof file);
  if (python_file_is_import_machinery(file)) return PythonCodeKind::kImportMachinery;
  return python_file_is_users(file, g_focus, python_main_code_name(g_main_code)) ? PythonCodeKind::kUser : PythonCodeKind::kLibrary;
}


void python_describe(const PythonFrame& frame, PythonDescription* d) {
  const PythonLayout& l = *g_layout;
  const auto file = read_at<std::uintptr_t>(frame.code, l.code_filename);
  const auto name = read_at<std::uintptr_t>(frame.code, l.code_qualname);
  const auto table = read_at<std::uintptr_t>(frame.code, l.code_linetable);
  const std::int64_t table_bytes = table != 0 ? read_at<std::int64_t>(table, l.var_size) : 0;
  const auto first_line = read_at<std::int32_t>(frame.code, l.code_firstlineno);
  if (d->code != frame.code || d->file_object != file || d->name_object != name || d->table != table ||
      d->table_bytes != table_bytes || d->first_line != first_line) {
    copy_text(file, d->file, sizeof d->file);
    copy_text(name, d->function, sizeof d->function);
    d->code = frame.code;
    d->file_object = file;
    d->name_object = name;
    d->table_bytes = table_bytes;
    d->first_line = first_line;
    // Its table's walk starts at its first entry.
    d->table = table;
    d->entry_offset = 0;
    d->entry_address = 0;
    d->entry_line = first_line;
  }
  d->line = line_of(table, frame.instruction, d);
}

}  // namespace tleak::agent
