// Where libdw finds a module's separate debug info: on this machine only.
//
// libdw's standard search (dwfl_standard_find_debuginfo) ends by asking a debuginfod server, and
// merely asking loads libdebuginfod with libcurl and 27 more libraries into tleak, about 40 ms on
// the machine this was measured on, even when no server is configured. tleak never reaches for
// the network while writing a report; this is the same local search without that last step.
#pragma once

#include <elfutils/libdwfl.h>

namespace tleak {

// A Dwfl_Callbacks::find_debuginfo: by build ID under the debuginfo path (/usr/lib/debug/.build-id,
// where Debian's -dbgsym packages put theirs, and a dwz alternate file the same way), then by the
// module's .gnu_debuglink name beside it, in its .debug directory and under /usr/lib/debug, the
// file's CRC checked.
int find_local_debuginfo(Dwfl_Module* module, void** userdata, const char* module_name, Dwarf_Addr base,
                         const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                         char** debuginfo_file_name);

}  // namespace tleak
