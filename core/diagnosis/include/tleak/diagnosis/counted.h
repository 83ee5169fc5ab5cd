// A count and its noun as the report's sentences print it: "1 block", "3 blocks". Every sentence
// that counts says its noun through this, so a count of one is never "1 blocks".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tleak::diagnosis {

inline std::string counted(std::uint64_t n, std::string_view one, std::string_view many) {
  std::string text = std::to_string(n);
  text += ' ';
  text += n == 1 ? one : many;
  return text;
}

}  // namespace tleak::diagnosis
