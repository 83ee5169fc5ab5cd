/* Built against the installed CPython headers (python3.11-dev): compares the agent's layout table
 * (agent/src/python_layout.h, written by hand) with the interpreter's own structures. Exits 0 when
 * every offset agrees, else names the first that does not. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_runtime.h>
#include <stddef.h>
#include <stdio.h>

#include "python_layout_values.h"

#define CHECK(name, actual)                                                              \
  if ((size_t)(name) != (size_t)(actual)) {                                              \
    printf("%s: agent says %zu, CPython %zu\n", #name, (size_t)(name), (size_t)(actual)); \
    return 1;                                                                            \
  }

int main(void) {
  CHECK(TLEAK_PY_VERSION, (PY_MAJOR_VERSION << 8) | PY_MINOR_VERSION);
  CHECK(TLEAK_PY_AUTOTSS_INITIALIZED, offsetof(_PyRuntimeState, gilstate.autoTSSkey) + offsetof(Py_tss_t, _is_initialized));
  CHECK(TLEAK_PY_AUTOTSS_KEY, offsetof(_PyRuntimeState, gilstate.autoTSSkey) + offsetof(Py_tss_t, _key));
  CHECK(TLEAK_PY_FINALIZING, offsetof(_PyRuntimeState, _finalizing));
  CHECK(TLEAK_PY_TSTATE_THREAD_ID, offsetof(PyThreadState, thread_id));
  CHECK(TLEAK_PY_TSTATE_CFRAME, offsetof(PyThreadState, cframe));
  CHECK(TLEAK_PY_CFRAME_CURRENT_FRAME, offsetof(_PyCFrame, current_frame));
  CHECK(TLEAK_PY_FRAME_CODE, offsetof(_PyInterpreterFrame, f_code));
  CHECK(TLEAK_PY_FRAME_PREVIOUS, offsetof(_PyInterpreterFrame, previous));
  CHECK(TLEAK_PY_FRAME_PREV_INSTR, offsetof(_PyInterpreterFrame, prev_instr));
  CHECK(TLEAK_PY_FRAME_IS_ENTRY, offsetof(_PyInterpreterFrame, is_entry));
  CHECK(TLEAK_PY_FRAME_OWNER, offsetof(_PyInterpreterFrame, owner));
  CHECK(TLEAK_PY_OWNER_GENERATOR, FRAME_OWNED_BY_GENERATOR);
  CHECK(TLEAK_PY_VAR_SIZE, offsetof(PyVarObject, ob_size));
  CHECK(TLEAK_PY_VAR_SIZE, offsetof(PyCodeObject, ob_base.ob_size));
  CHECK(TLEAK_PY_VAR_SIZE, offsetof(PyBytesObject, ob_base.ob_size));
  CHECK(TLEAK_PY_TYPE_FLAGS, offsetof(PyTypeObject, tp_flags));
  CHECK(TLEAK_PY_CODE_FILENAME, offsetof(PyCodeObject, co_filename));
  CHECK(TLEAK_PY_CODE_QUALNAME, offsetof(PyCodeObject, co_qualname));
  CHECK(TLEAK_PY_CODE_LINETABLE, offsetof(PyCodeObject, co_linetable));
  CHECK(TLEAK_PY_CODE_FIRSTLINENO, offsetof(PyCodeObject, co_firstlineno));
  CHECK(TLEAK_PY_CODE_FIRSTTRACEABLE, offsetof(PyCodeObject, _co_firsttraceable));
  CHECK(TLEAK_PY_CODE_INSTRUCTIONS, offsetof(PyCodeObject, co_code_adaptive));
  CHECK(TLEAK_PY_UNICODE_LENGTH, offsetof(PyASCIIObject, length));
  CHECK(TLEAK_PY_UNICODE_STATE, offsetof(PyASCIIObject, state));
  CHECK(TLEAK_PY_UNICODE_ASCII_DATA, sizeof(PyASCIIObject));
  CHECK(TLEAK_PY_UNICODE_COMPACT_DATA, sizeof(PyCompactUnicodeObject));
  CHECK(TLEAK_PY_BYTES_DATA, offsetof(PyBytesObject, ob_sval));
  printf("layout agrees with CPython %d.%d\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
  return 0;
}
