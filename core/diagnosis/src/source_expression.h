// The source text a frame's columns span, read from its file as the file is now, as
// Python's own tracebacks quote it: what tells two calls on one line apart for a person
// (`self.l1(x)` and `self.l2(...)`) where their frames name the same function and line.
#pragma once

#include <optional>
#include <string>

#include "tleak/symbolizer.h"

namespace tleak::diagnosis {

// The text of `frame`'s expression, at most `max_bytes` of it (cut with "..."), or nothing when
// the frame has no columns, its file cannot be read, or its line does not reach the columns (a file
// changed since the run). A native frame's column has no end: its expression is the C or C++ call
// found there (its callee's name and arguments, which must end on the line), or nothing.
std::optional<std::string> source_expression(const Frame& frame, std::size_t max_bytes = 48);

}  // namespace tleak::diagnosis
