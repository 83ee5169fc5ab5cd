// The note that says why some modules' frames have no names: the symbolizer could not read the
// module (its file changed since the run, or could not be opened: under a low hard limit on open
// files, libdw keeping each module's file open). Each such frame says so in the JSON; without a
// note, a reader of the text or the page saw only frames named by their place in their module.
#pragma once

#include <string>
#include <vector>

#include "tleak/diagnosis/report.h"

namespace tleak::diagnosis {

// "the symbols of 2 modules could not be read, so their frames are named by their place in them:
// libbar.so changed since the run; libfoo.so could not be opened: Too many open files";
// empty when every frame's module was read.
std::string unnamed_modules_note(const std::vector<SiteReport>& sites);

}  // namespace tleak::diagnosis
