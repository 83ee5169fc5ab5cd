#include "source_expression.h"

#include <fstream>

namespace tleak::diagnosis {
namespace {

bool is_name_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':' ||
         c == '.' || c == '~' || (static_cast<unsigned char>(c) & 0x80) != 0;
}

// The index of the bracket matching text[at] (an opening one searched forward, a closing one back),
// or npos.
std::size_t matching(const std::string& text, std::size_t at) {
  const char mine = text[at];
  const bool forward = mine == '(' || mine == '<';
  const char theirs = mine == '(' ? ')' : mine == ')' ? '(' : mine == '<' ? '>' : '<';
  int depth = 0;
  for (std::size_t i = at; i < text.size(); forward ? ++i : --i) {
    if (text[i] == mine) ++depth;
    if (text[i] == theirs && --depth == 0) return i;
    if (!forward && i == 0) break;
  }
  return std::string::npos;
}

// Where the callee's name before text[open] (its "(") begins: back over names, scopes, members
// ("a.b", "p->f") and template arguments.
std::size_t callee_start(const std::string& text, std::size_t open) {
  std::size_t start = open;
  while (start > 0) {
    const char c = text[start - 1];
    if (is_name_byte(c)) {
      --start;
    } else if (c == '>' && start >= 2 && text[start - 2] == '-') {
      start -= 2;
    } else if (c == '>') {
      const std::size_t angle = matching(text, start - 1);
      if (angle == std::string::npos) break;
      start = angle;
    } else {
      break;
    }
  }
  return start;
}

// A C or C++ call on `text` around byte `at`, where a compiler's column for a call points: its
// callee's name (clang), its "(" or its ")" (GCC): "std::make_shared<Node>()", "payload(300)". Empty
// when no call with a name is found there, or it does not end on the line.
std::string call_around(const std::string& text, std::size_t at) {
  std::size_t open = std::string::npos;
  if (text[at] == ')') {
    open = matching(text, at);
  } else if (text[at] == '(') {
    open = at;
  } else if (is_name_byte(text[at])) {
    std::size_t i = at;
    while (i < text.size()) {
      if (is_name_byte(text[i]) || text[i] == ' ') {
        ++i;
      } else if (text.compare(i, 2, "->") == 0) {
        i += 2;
      } else {
        break;
      }
    }
    if (i < text.size() && text[i] == '<') {
      const std::size_t angle = matching(text, i);
      i = angle == std::string::npos ? text.size() : angle + 1;
    }
    if (i < text.size() && text[i] == '(') open = i;
  }
  if (open == std::string::npos) return {};
  const std::size_t close = matching(text, open);
  const std::size_t start = callee_start(text, open);
  if (close == std::string::npos || start == open) return {};
  return text.substr(start, close + 1 - start);
}

// Whether `text` is longer than `max_bytes`: then cut there, at a character's first byte, never
// inside one, and "..." added.
bool cut_to(std::string& text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return false;
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  text.resize(cut);
  text += "...";
  return true;
}

}  // namespace

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
  if (frame.kind != FrameKind::kPython) {
    // A native frame's column is where its call is, with no end: the call is read from there.
    if (begin >= text.size()) return std::nullopt;
    std::string call = call_around(text, begin);
    if (call.empty()) return std::nullopt;
    cut_to(call, max_bytes);
    return call;
  }
  // Without an end on this line the expression runs on past it: its first line is quoted.
  const std::size_t end = frame.end_column > frame.column
                              ? static_cast<std::size_t>(frame.end_column - 1)
                              : text.size();
  if (begin >= end || end > text.size()) return std::nullopt;
  std::string expression = text.substr(begin, end - begin);
  const bool runs_on = frame.end_column <= frame.column;
  if (!cut_to(expression, max_bytes) && runs_on) expression += " ...";
  return expression;
}

}  // namespace tleak::diagnosis
