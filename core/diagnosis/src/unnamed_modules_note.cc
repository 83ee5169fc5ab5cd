#include "unnamed_modules_note.h"

#include <cstddef>
#include <map>

namespace tleak::diagnosis {

std::string unnamed_modules_note(const std::vector<SiteReport>& sites) {
  // By module, the symbolizer's reason.
  std::map<std::string, std::string> reasons;
  for (const SiteReport& site : sites) {
    for (const Frame& frame : site.frames) {
      if (const std::string_view why = unread_module_reason(frame); !why.empty()) reasons.emplace(frame.module, why);
    }
  }
  if (reasons.empty()) return {};
  constexpr std::size_t kListed = 4;
  std::string note = reasons.size() == 1
                         ? "the symbols of 1 module could not be read, so its frames are named by their place in it: "
                         : "the symbols of " + std::to_string(reasons.size()) +
                               " modules could not be read, so their frames are named by their place in them: ";
  std::size_t listed = 0;
  for (const auto& [module, reason] : reasons) {
    if (listed == kListed) {
      note += "; and " + std::to_string(reasons.size() - kListed) + " more";
      break;
    }
    if (listed++ > 0) note += "; ";
    note += reason;
  }
  return note;
}

}  // namespace tleak::diagnosis
