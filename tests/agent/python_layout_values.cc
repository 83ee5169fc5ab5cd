// Prints the agent's CPython layout table as C macros, for python_layout_check.c (which cannot
// include the C++ header itself: it is C, built against the interpreter's headers).
#include <cstdio>

#include "python_layout.h"

int main() {
  const tleak::agent::PythonLayout& l = tleak::agent::kPython311;
  std::printf("#define TLEAK_PY_VERSION %u\n", l.version);
  std::printf("#define TLEAK_PY_AUTOTSS_INITIALIZED %u\n", l.runtime_autotss_initialized);
  std::printf("#define TLEAK_PY_AUTOTSS_KEY %u\n", l.runtime_autotss_key);
  std::printf("#define TLEAK_PY_FINALIZING %u\n", l.runtime_finalizing);
  std::printf("#define TLEAK_PY_TSTATE_THREAD_ID %u\n", l.tstate_thread_id);
  std::printf("#define TLEAK_PY_TSTATE_CFRAME %u\n", l.tstate_cframe);
  std::printf("#define TLEAK_PY_CFRAME_CURRENT_FRAME %u\n", l.cframe_current_frame);
  std::printf("#define TLEAK_PY_FRAME_CODE %u\n", l.frame_code);
  std::printf("#define TLEAK_PY_FRAME_PREVIOUS %u\n", l.frame_previous);
  std::printf("#define TLEAK_PY_FRAME_PREV_INSTR %u\n", l.frame_prev_instr);
  std::printf("#define TLEAK_PY_FRAME_IS_ENTRY %u\n", l.frame_is_entry);
  std::printf("#define TLEAK_PY_FRAME_OWNER %u\n", l.frame_owner);
  std::printf("#define TLEAK_PY_OWNER_GENERATOR %u\n", l.owner_generator);
  std::printf("#define TLEAK_PY_VAR_SIZE %u\n", l.var_size);
  std::printf("#define TLEAK_PY_TYPE_FLAGS %u\n", l.type_flags);
  std::printf("#define TLEAK_PY_CODE_FILENAME %u\n", l.code_filename);
  std::printf("#define TLEAK_PY_CODE_QUALNAME %u\n", l.code_qualname);
  std::printf("#define TLEAK_PY_CODE_LINETABLE %u\n", l.code_linetable);
  std::printf("#define TLEAK_PY_CODE_FIRSTLINENO %u\n", l.code_firstlineno);
  std::printf("#define TLEAK_PY_CODE_FIRSTTRACEABLE %u\n", l.code_firsttraceable);
  std::printf("#define TLEAK_PY_CODE_INSTRUCTIONS %u\n", l.code_instructions);
  std::printf("#define TLEAK_PY_UNICODE_LENGTH %u\n", l.unicode_length);
  std::printf("#define TLEAK_PY_UNICODE_STATE %u\n", l.unicode_state);
  std::printf("#define TLEAK_PY_UNICODE_ASCII_DATA %u\n", l.unicode_ascii_data);
  std::printf("#define TLEAK_PY_UNICODE_COMPACT_DATA %u\n", l.unicode_compact_data);
  std::printf("#define TLEAK_PY_BYTES_DATA %u\n", l.bytes_data);
  return 0;
}
