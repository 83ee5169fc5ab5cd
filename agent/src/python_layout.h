// Where CPython keeps what the agent reads from inside malloc: the running thread state, its
// interpreter frames, and a frame's code object. These are interpreter internals, so they are
// given per minor version (from CPython's own headers, pycore_frame.h, pycore_runtime.h, code.h;
// tests/agent/python_layout_test.cc checks them against the headers of the installed Python).
// A version without an entry gets no Python frames, never wrong ones.
#pragma once

#include <cstdint>

#include "object_pools.h"

namespace tleak::agent {

struct PythonLayout {
  std::uint32_t version;  // major << 8 | minor
  // _PyRuntimeState
  std::uint32_t runtime_autotss_initialized;  // gilstate.autoTSSkey._is_initialized
  std::uint32_t runtime_autotss_key;          // gilstate.autoTSSkey._key: each thread's own state
  std::uint32_t runtime_finalizing;           // _finalizing: the state of the thread finalizing, or 0
  // PyThreadState
  std::uint32_t tstate_thread_id;  // pthread_self() of its thread
  std::uint32_t tstate_cframe;
  // _PyCFrame
  std::uint32_t cframe_current_frame;
  // _PyInterpreterFrame
  std::uint32_t frame_code;
  std::uint32_t frame_previous;
  std::uint32_t frame_prev_instr;
  std::uint32_t frame_is_entry;  // set on the frame an eval loop was entered with from C
  std::uint32_t frame_owner;
  std::uint8_t owner_generator;  // a generator's frame is complete even before its first instruction
  // PyVarObject: the size of a code object, a bytes object
  std::uint32_t var_size;
  // PyTypeObject
  std::uint32_t type_flags;
  // PyCodeObject
  std::uint32_t code_filename;
  std::uint32_t code_qualname;
  std::uint32_t code_linetable;
  std::uint32_t code_firstlineno;
  std::uint32_t code_firsttraceable;
  std::uint32_t code_instructions;  // co_code_adaptive: the instructions, 2-byte code units
  // PyUnicodeObject (compact forms) and PyBytesObject
  std::uint32_t unicode_length;
  std::uint32_t unicode_state;
  std::uint32_t unicode_ascii_data;    // sizeof(PyASCIIObject)
  std::uint32_t unicode_compact_data;  // sizeof(PyCompactUnicodeObject)
  std::uint32_t bytes_data;
  // pymalloc (Objects/obmalloc.c, not in any header: the scan believes a pool only when its header
  // holds up, object_pools.h)
  PoolGeometry pools;
};

// CPython 3.11 on x86-64 (Debian 12's python3.11).
inline constexpr PythonLayout kPython311 = {
    .version = 0x030b,
    .runtime_autotss_initialized = 592,
    .runtime_autotss_key = 596,
    .runtime_finalizing = 24,
    .tstate_thread_id = 152,
    .tstate_cframe = 56,
    .cframe_current_frame = 8,
    .frame_code = 32,
    .frame_previous = 48,
    .frame_prev_instr = 56,
    .frame_is_entry = 68,
    .frame_owner = 69,
    .owner_generator = 1,
    .var_size = 16,
    .type_flags = 168,
    .code_filename = 112,
    .code_qualname = 128,
    .code_linetable = 136,
    .code_firstlineno = 72,
    .code_firsttraceable = 168,
    .code_instructions = 184,
    .unicode_length = 16,
    .unicode_state = 32,
    .unicode_ascii_data = 48,
    .unicode_compact_data = 72,
    .bytes_data = 32,
    // 16 KiB pools (64-bit builds use large pools since 3.10), a 48-byte header, 16-byte classes up
    // to 512 bytes.
    .pools = {.pool_bytes = 16 * 1024, .first_block = 48, .size_quantum = 16, .classes = 32},
};

}  // namespace tleak::agent
