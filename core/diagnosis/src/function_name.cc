#include "tleak/diagnosis/function_name.h"

#include <array>
#include <cctype>
#include <vector>

namespace tleak::diagnosis {
namespace {

constexpr std::string_view kAnonymous = "(anonymous namespace)";

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// How many characters the operator's name at `at` takes ("operator<<=" 11, "operator()" 10, a
// conversion "operator unsigned long" or "operator new[]" up to its parameter list), or 0 when
// `at` starts no operator's name. Its brackets and spaces are no nesting and no return type.
std::size_t operator_length(std::string_view name, std::size_t at) {
  constexpr std::string_view kWord = "operator";
  if (name.substr(at, kWord.size()) != kWord || (at > 0 && identifier_char(name[at - 1]))) return 0;
  std::size_t end = at + kWord.size();
  if (end == name.size()) return kWord.size();
  if (identifier_char(name[end])) return 0;  // "operators", an identifier of its own
  if (name[end] == ' ') {
    // new, delete, co_await or a conversion, whose type may hold template arguments.
    int depth = 0;
    for (; end < name.size(); ++end) {
      const char c = name[end];
      if (c == '<' || c == '[') ++depth;
      if (c == '>' || c == ']') --depth;
      if (c == '(' && depth <= 0) break;
    }
    return end - at;
  }
  if (name.substr(end, 2) == "\"\"") {  // a literal operator: operator"" _km
    end += 2;
    if (end < name.size() && name[end] == ' ') ++end;
    while (end < name.size() && identifier_char(name[end])) ++end;
    return end - at;
  }
  // Longest first: "<<=" before "<<" before "<".
  static constexpr std::array<std::string_view, 38> kSymbols = {
      "->*", "<=>", "<<=", ">>=", "()", "[]", "->", "<<", ">>", "<=", ">=", "==", "!=",
      "&&",  "||",  "++",  "--",  "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<",
      ">",   "+",   "-",   "*",   "/",  "%",  "&",  "|",  "^",  "~",  "!",  "="};
  for (const std::string_view symbol : kSymbols) {
    if (name.substr(end, symbol.size()) == symbol) return end + symbol.size() - at;
  }
  if (name[end] == ',') return end + 1 - at;
  return kWord.size();
}

// How many characters "decltype (...)" at `at` takes, its parenthesized expression included, or 0.
std::size_t decltype_length(std::string_view name, std::size_t at) {
  constexpr std::string_view kWord = "decltype";
  if (name.substr(at, kWord.size()) != kWord || (at > 0 && identifier_char(name[at - 1]))) return 0;
  std::size_t end = at + kWord.size();
  if (end < name.size() && name[end] == ' ') ++end;
  if (end >= name.size() || name[end] != '(') return 0;
  int depth = 0;
  for (; end < name.size(); ++end) {
    if (name[end] == '(') ++depth;
    if (name[end] == ')' && --depth == 0) return end + 1 - at;
  }
  return name.size() - at;
}

// Calls `visit(index)` for each character of `name` outside every bracket, operator name,
// anonymous namespace and decltype, until `visit` returns false; `depth` is the nesting at that character.
template <class Visit>
void scan_top_level(std::string_view name, Visit visit) {
  int depth = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    // A report names every frame of a thousand sites several times: the words are looked for only
    // where their first letter is.
    std::size_t skip = 0;
    if (c == 'o') skip = operator_length(name, i);
    if (c == '(' && name.substr(i, kAnonymous.size()) == kAnonymous) skip = kAnonymous.size();
    // A return type "decltype (...)": its parentheses are no parameter list.
    if (c == 'd') skip = decltype_length(name, i);
    if (skip > 0) {
      i += skip - 1;
      continue;
    }
    if (c == '(' && depth == 0) {
      if (!visit(i)) return;
      ++depth;
      continue;
    }
    if (c == '<' || c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == '>' || c == ')' || c == ']' || c == '}') {
      if (depth > 0) --depth;
    } else if (depth == 0 && !visit(i)) {
      return;
    }
  }
}

// A scope's name without its template arguments: "_Rb_tree<int, ...>" -> "_Rb_tree". An
// operator's name ("operator<") and a name that is all brackets ("<module>", "{lambda()#1}") stay.
std::string_view without_template_arguments(std::string_view scope) {
  if (scope.empty() || scope.back() != '>' || operator_length(scope, 0) > 0) return scope;
  int depth = 0;
  for (std::size_t i = scope.size(); i-- > 0;) {
    if (scope[i] == '>') ++depth;
    if (scope[i] == '<' && --depth == 0) {
      return i > 0 && identifier_char(scope[i - 1]) ? scope.substr(0, i) : scope;
    }
  }
  return scope;
}

}  // namespace

std::string_view qualified_name(std::string_view name) {
  std::size_t start = 0;
  std::size_t end = name.size();
  scan_top_level(name, [&](std::size_t i) {
    if (name[i] == ' ') start = i + 1;  // what came before is the return type
    if (name[i] != '(') return true;
    end = i;
    return false;
  });
  return name.substr(start, end - start);
}

std::string short_function(std::string name) {
  const std::string_view qualified = qualified_name(name);
  std::vector<std::string_view> scopes;
  std::size_t from = 0;
  scan_top_level(qualified, [&](std::size_t i) {
    if (qualified.substr(i, 2) == "::") {
      scopes.push_back(qualified.substr(from, i - from));
      from = i + 2;
    }
    return true;
  });
  scopes.push_back(qualified.substr(from));
  std::string shown;
  int kept = 0;
  for (std::size_t i = scopes.size(); i-- > 0 && kept < 2;) {
    if (scopes[i] == kAnonymous || scopes[i] == "tleak") continue;
    const std::string_view scope = without_template_arguments(scopes[i]);
    shown = kept == 0 ? std::string(scope) : std::string(scope) + "::" + shown;
    ++kept;
  }
  return shown;
}

}  // namespace tleak::diagnosis
