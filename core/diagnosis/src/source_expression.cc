#include "source_expression.h"

#include <fstream>

namespace tleak::diagnosis {

std::optional<std::string> source_expression(const Frame& frame, std::size_t max_bytes) {
  if (frame.column <= 0 || frame.line <= 0 || frame.file.empty()) return std::nullopt;
  std::ifstream in(frame.file, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text;
  for (int n = 0; n < frame.line; ++n) {
    if (!std::getline(in, text)) return std::nullopt;
  }
  // A file with Windows line ends: the carriage return is no part of the line (nor of a quote that
  // runs to its end).
  if (!text.empty() && text.back() == '\r') text.pop_back();
  const auto begin = static_cast<std::size_t>(frame.column - 1);
  // Without an end on this line the expression runs on past it: its first line is quoted.
  const std::size_t end = frame.end_column > frame.column
                              ? static_cast<std::size_t>(frame.end_column - 1)
                              : text.size();
  if (begin >= end || end > text.size()) return std::nullopt;
  std::string expression = text.substr(begin, end - begin);
  const bool runs_on = frame.end_column <= frame.column;
  if (expression.size() > max_bytes) {
    // Cut at a character's first byte, never inside one.
    std::size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(expression[cut]) & 0xc0) == 0x80) --cut;
    expression.resize(cut);
    expression += "...";
  } else if (runs_on) {
    expression += " ...";
  }
  return expression;
}

}  // namespace tleak::diagnosis
