// Demangled C++ function names, read with their nesting in mind: template arguments, lambdas and
// operators hold "::", "(", "<" and spaces of their own, so a name is not cut at the first of them
// ("std::_Rb_tree<int, ...>::_M_emplace_hint_unique<std::tuple<int const&> >(...)" had been shown as
// "tuple<int const&>, std::tuple<> >").
#pragma once

#include <string>
#include <string_view>

namespace tleak::diagnosis {

// The name without the return type a template instantiation's name carries in front, and without
// its parameter list and the qualifiers after it: "std::vector<int> load<int>(int) const" ->
// "load<int>".
std::string_view qualified_name(std::string_view name);
// "Class::method": the last two scopes of qualified_name, without their template arguments, and
// without tleak's namespace and anonymous ones. A name that is no C++ one (a Python function,
// "<module>") is returned whole.
std::string short_function(std::string name);

}  // namespace tleak::diagnosis
