// Python frames of the allocating thread, read from inside malloc: the thread's own state (found
// through the interpreter's thread-specific key, never the GIL holder's), whose frames cannot
// change while this very thread is busy in malloc, with or without the GIL (a C extension that
// released it is still inside the call its Python frame made). Never allocating, never calling
// into the interpreter. Each frame is captured as what is
// cheap (its code object and instruction), interned to a small id; the file, function and line
// are resolved once per id, in the agent, while the code object is certainly alive, and sent to
// tleak as a kPythonFrame record. Threads that never ran Python, or run without the GIL, get none.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "code_range.h"
#include "reachability.h"
#include "tleak/agent/python_files.h"

namespace tleak::agent {

struct PythonFrame {
  std::uint64_t code;    // PyCodeObject*
  std::uint32_t instruction;  // index of the instruction running (code units from the start)
  bool is_entry;         // the innermost frame of one call into the eval loop from C
};

// Finds the interpreter in this process (the python executable or a loaded libpython) and its
// layout. Call at start-up, outside any lock. False: no Python frames (not CPython, or a version
// without a layout).
bool python_init();
bool python_enabled();
// Whether the interpreter serves objects of 512 bytes or less from pymalloc, its own arenas, which
// never call malloc: the agent does not see them. True unless PYTHONMALLOC named malloc (or
// malloc_debug) as the program started and the interpreter reads it (not under python -E or -I,
// which python_read_main_code finds on the command line).
bool python_small_objects_unseen();
// Whether the interpreter has begun finalizing (Py_FinalizeEx, past the program's atexit callbacks):
// what it frees from then on is its teardown. False without Python.
bool python_finalizing();

// The interpreter's objects whose payload is never a pointer, for the exit scan: a code object's
// instructions, a bytes object's bytes, a str's text, a type's flags. Kinds of one type are adjacent. 0 without
// Python (or less room than kPythonDataOnlyKinds).
inline constexpr int kPythonDataOnlyKinds = 7;
int python_data_only_kinds(DataOnlyKind* out, int max);

// pymalloc's pool geometry in this interpreter, for the exit scan; false without Python.
bool python_object_pools(PoolGeometry* out);

// This thread's Python frames, innermost first; 0 for a thread that never ran Python. `*rest` is
// set to where the walk stopped with frames left (for python_stack_beyond), or 0 at the end.
int python_stack(PythonFrame* out, int max, std::uintptr_t* rest);

// The frames after `rest`, at most `max` of them (is_entry not kept); `*rest` moves on likewise.
int python_stack_beyond(PythonFrame* out, int max, std::uintptr_t* rest);

// The user's Python code is every file but the standard library's, installed packages' and frozen
// modules' (the rule of the report's labels), or, when tleak was given --focus, the files under
// that prefix (read from the environment at start-up, kEnvPythonFocus); and the program's own code
// without a file (python_process_main_code).
void python_set_focus(const char* prefix);
// Reads what the program runs (tleak/agent/python_files.h): its own code without a file, the user's
// too; or the script or module it runs instead, which names the report. Once, at start-up, after
// python_init (the program may rewrite its arguments later; what ran as its main code does not
// change). `executable`: the process's, /proc/self/exe.
void python_read_main_code(std::string_view executable);
PythonMainCode python_process_main_code();
// The script's path or the module's name as the command line gave it (in a static buffer), or empty.
std::string_view python_process_main_target();
enum class PythonCodeKind : std::uint8_t { kUser, kLibrary, kImportMachinery };
// Whose the code object's file is, by that rule (reads its file name: call on a cache miss, not
// per frame). The import machinery (<frozen importlib._bootstrap>...) is a library apart.
PythonCodeKind python_code_kind(std::uint64_t code);

// The eval loop's function: [start, end) (python_init sets them; both 0 without Python).
extern std::uintptr_t g_eval_start, g_eval_end;

// Whether a return address lies in the eval loop's function (where Python frames belong). Inline:
// it runs for every native frame of every allocation.
inline bool in_eval_loop(std::uint64_t return_address) {
  return return_address > g_eval_start && return_address <= g_eval_end;
}

// The interpreter's code and the C library's (python_init sets them; empty without Python).
extern CodeRange g_interpreter_code, g_c_library_code;

// Whether a native frame is an extension's (numpy, PyTorch's bindings): code neither of the
// interpreter nor of the C library. Inline, like in_eval_loop.
inline bool in_extension(std::uint64_t return_address) {
  const auto* at = reinterpret_cast<const void*>(return_address);
  return !g_interpreter_code.holds(at) && !g_c_library_code.holds(at);
}

// Whether a return address lies in one of the interpreter's functions that only pass a call on to
// what is called (PyObject_Vectorcall, _PyObject_MakeTpCall, ...): a call goes through them, or
// not, as CPython 3.11 specializes the calling instruction. False without Python.
bool in_call_dispatch(std::uint64_t return_address);

// Where the interpreter in this process keeps a code object's file and qualified-name objects
// (python_init sets them).
extern std::uint32_t g_code_filename_offset, g_code_qualname_offset;

// The code object's file and qualified-name objects (identity only, for cache validation). Inline:
// it runs for every Python frame of every allocation.
inline void python_code_identity(std::uint64_t code, std::uint64_t* file, std::uint64_t* name) {
  std::memcpy(file, reinterpret_cast<const void*>(code + g_code_filename_offset), sizeof *file);
  std::memcpy(name, reinterpret_cast<const void*>(code + g_code_qualname_offset), sizeof *name);
}

// A frame's description, and what it was read from. A thread describes the frames of one code
// object one after another (a module's code runs top to bottom as it is imported), and each had
// decoded the same names again and walked the code's line table from its start (importing PyTorch:
// 7,500 descriptions, 2.5 us each).
struct PythonDescription {
  char file[512];
  char function[256];
  std::int32_t line = 0;
  std::int32_t column = -1, end_column = -1;  // of the instruction's expression on its line; -1: none
  // The code object described last, the objects it held (a code object freed and another made at
  // its address, as a loop of exec() can, must differ in one of them, or in its first line or its
  // table's size, to be read afresh: the same bar as a frame's id, whose cache takes code, file and
  // name), and where in its line table the entry found last begins: its offset, first code unit and
  // the line before it.
  std::uint64_t code = 0, file_object = 0, name_object = 0, table = 0;
  std::int64_t table_bytes = 0;
  std::int32_t first_line = 0;
  std::uint32_t entry_offset = 0, entry_address = 0;
  std::int32_t entry_line = 0;
};

// Resolves a captured frame once: file, qualified name (NUL-terminated), line and columns into `*d`, which
// holds the previous description (of the same thread) or is new.
void python_describe(const PythonFrame& frame, PythonDescription* d);

}  // namespace tleak::agent
