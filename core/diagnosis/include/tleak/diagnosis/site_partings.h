// What tells a site apart from the other sites of a report that read alike (same label, and the
// same frames shown as far as both show any: a PyTorch line whose module call allocates in several
// places), as the text summary and the report page say it: its "via" lines.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tleak/diagnosis/report.h"

namespace tleak::diagnosis {

// The frames the text shows for a site begin here: from the runtime call its label names, down its
// callers; kShownFrames of them.
std::size_t first_shown_frame(const SiteReport& s, PythonUsersCode mine);
inline constexpr std::size_t kShownFrames = 3;

// The via lines of each of the report's first `count` sites, told apart from those sites only (the
// text tells apart the sites it lists): the function on its path the others lack ("via
// addmm::call"), or its own call on a line they share, quoted from the file with its column ("via
// self.l1(x)  serve.py:10:35"), and more where the first does not tell it from every other one.
// Empty for a site that reads like no other.
std::vector<std::vector<std::string>> via_lines(const Report& report, std::size_t count);

}  // namespace tleak::diagnosis
