// Uncompressed copies of separate debug files, kept between runs.
//
// A debug file whose DWARF sections are compressed (SHF_COMPRESSED: Debian's libc6-dbg, which
// valgrind pulls in) is inflated whole by libdw every time it is opened, before a single address
// is looked up: the C library's, 4 MB on disk and 10 MB inflated, is about 50 ms of zlib, more
// than `tleak run -- ls` spends on everything else. tleak keeps an uncompressed copy of such a
// file under its build ID, made the first time it is read, and opens that copy on every later run.
//
// The copies live in $TLEAK_CACHE_DIR/debuginfo ($XDG_CACHE_HOME/tleak, else ~/.cache/tleak, when
// unset; an empty TLEAK_CACHE_DIR keeps none), at most kDebuginfoCacheBytes in all, the least
// recently used removed first. A copy is written beside its final name and renamed into place, so
// a run that stops half-way, or two that race, leave a whole copy or none.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tleak {

inline constexpr std::uint64_t kDebuginfoCacheBytes = std::uint64_t{1} << 30;

// A build ID as the file names under .build-id/ and here spell it: lowercase hex.
std::string build_id_hex(std::string_view build_id);

// Where the copies are kept; empty when none are (TLEAK_CACHE_DIR set empty, or no home).
std::string debuginfo_cache_directory();

// For the debug file open as `fd`, found for an object whose build ID is `build_id` (raw bytes):
// a descriptor of an uncompressed copy of it in `directory`, made now if none is there yet, its
// path in `*path`. -1 when there is no call for one (no compressed section, a dwz alternate file
// referred to by a relative path, another build ID) or none can be had (no room, a read-only
// directory): `fd`, which is never closed here, is then the one to read.
int uncompressed_debuginfo(int fd, std::string_view build_id, const std::string& directory, std::string* path);

}  // namespace tleak
