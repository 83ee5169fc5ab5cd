// Writes a whole file or nothing: the text goes to a temporary beside the target, is flushed to
// disk, then renamed over it. A reader never sees a half-written report.
#pragma once

#include <stdexcept>
#include <string>

namespace tleak::diagnosis {

class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws FileError naming the path and the system's reason.
void write_file_atomically(const std::string& path, const std::string& contents);
// Throws FileError if a file could not be created at `path` (directory missing or not writable),
// without creating anything: lets a command refuse before doing a long run.
void check_writable(const std::string& path);

}  // namespace tleak::diagnosis
