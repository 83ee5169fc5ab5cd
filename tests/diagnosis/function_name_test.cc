// Demangled names as libstdc++, lambdas, operators and Python frames give them, shortened for
// labels and text.
#include "tleak/diagnosis/function_name.h"

#include <gtest/gtest.h>

#include "tleak/diagnosis/report.h"

namespace tleak::diagnosis {
namespace {

// A function the compiler inlined into `module`, at a line of `file`.
Frame inlined(std::string function, std::string module, std::string file) {
  Frame frame{1, std::move(function), std::move(module), 1, std::move(file), 10};
  frame.kind = FrameKind::kInlined;
  return frame;
}

TEST(FunctionName, ShortNamesReadTemplateArgumentsAsNesting) {
  // A std::map insertion, as libdw demangled it in a real program: the return type in front, and
  // "::", "<" and spaces inside the template arguments.
  EXPECT_EQ(short_function(
                "std::_Rb_tree_iterator<std::pair<int const, std::vector<char, std::allocator<char> > > > "
                "std::_Rb_tree<int, std::pair<int const, std::vector<char, std::allocator<char> > >, "
                "std::_Select1st<std::pair<int const, std::vector<char, std::allocator<char> > > >, std::less<int>, "
                "std::allocator<std::pair<int const, std::vector<char, std::allocator<char> > > > "
                ">::_M_emplace_hint_unique<std::piecewise_construct_t const&, std::tuple<int const&>, std::tuple<> "
                ">(std::_Rb_tree_const_iterator<std::pair<int const, std::vector<char, std::allocator<char> > > >, "
                "std::piecewise_construct_t const&, std::tuple<int const&>&&, std::tuple<>&&)"),
            "_Rb_tree::_M_emplace_hint_unique");
  EXPECT_EQ(short_function("std::thread::_State_impl<std::thread::_Invoker<std::tuple<main::{lambda()#1}> > >::_M_run()"),
            "_State_impl::_M_run");
  EXPECT_EQ(short_function("void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>("
                           "__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, int const&)"),
            "vector::_M_realloc_insert");
  EXPECT_EQ(short_function("std::vector<int, std::allocator<int> > load<int>(int)"), "load");
  EXPECT_EQ(short_function("unsigned long count_rows(char const*)"), "count_rows");
  // std::construct_at, as GCC 12's libstdc++ declares it, inlined into a program's emplace_back.
  const std::string construct_at =
      "decltype (::new ((void*)(0)) std::vector<int, std::allocator<int> >((declval<int>)(), (declval<int&>)())) "
      "std::construct_at<std::vector<int, std::allocator<int> >, int, int&>(std::vector<int, std::allocator<int> >*, "
      "int&&, int&)";
  EXPECT_EQ(short_function(construct_at), "std::construct_at");
  EXPECT_TRUE(is_allocation_plumbing(Frame{3, construct_at, "app", 3, "/usr/include/c++/12/bits/stl_construct.h", 97}));
}

TEST(FunctionName, ShortNamesKeepOperatorsAndLambdas) {
  EXPECT_EQ(short_function("operator new(unsigned long)"), "operator new");
  EXPECT_EQ(short_function("operator new[](unsigned long, std::align_val_t)"), "operator new[]");
  EXPECT_EQ(short_function("Printer::operator<<(std::ostream&)"), "Printer::operator<<");
  EXPECT_EQ(short_function("Range::operator<(Range const&) const"), "Range::operator<");
  EXPECT_EQ(short_function("Cache<Key>::operator()(int) const"), "Cache::operator()");
  EXPECT_EQ(short_function("Box::operator std::vector<int, std::allocator<int> >() const"),
            "Box::operator std::vector<int, std::allocator<int> >");
  EXPECT_EQ(short_function("main::{lambda()#1}::operator()() const"), "{lambda()#1}::operator()");
  EXPECT_EQ(short_function("tleak::runtime::Function::operator()(std::vector<int> const&)"), "Function::operator()");
}

TEST(FunctionName, ShortNamesDropOnlyWholeScopesOfTleakAndAnonymousNamespaces) {
  EXPECT_EQ(short_function("tleak::scenarios::(anonymous namespace)::append_result(int)"), "scenarios::append_result");
  EXPECT_EQ(short_function("(anonymous namespace)::serve(int)"), "serve");
  EXPECT_EQ(short_function("mytleak::run()"), "mytleak::run");
  EXPECT_EQ(short_function("main"), "main");
  EXPECT_EQ(short_function("??"), "??");
  EXPECT_EQ(short_function(""), "");
}

TEST(FunctionName, PythonNamesStayWhole) {
  EXPECT_EQ(short_function("<module>"), "<module>");
  EXPECT_EQ(short_function("Model.forward"), "Model.forward");
  EXPECT_EQ(short_function("outer.<locals>.<lambda>"), "outer.<locals>.<lambda>");
  EXPECT_EQ(short_function("<listcomp>"), "<listcomp>");
}

TEST(FunctionName, QualifiedNamesLeaveTheReturnTypeAndParametersOut) {
  EXPECT_EQ(qualified_name("std::vector<int, std::allocator<int> > load<int>(int)"), "load<int>");
  EXPECT_EQ(qualified_name("ns::Cache::get(int) const"), "ns::Cache::get");
  EXPECT_EQ(qualified_name("operator delete(void*)"), "operator delete");
  // A program's own function template is not the C++ library's plumbing for its std:: return type.
  EXPECT_FALSE(is_allocation_plumbing(Frame{1, "std::vector<int, std::allocator<int> > load<int>(int)", "app", 1, "/src/app.cc", 9}));
  EXPECT_TRUE(is_allocation_plumbing(Frame{2, "void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(int const&)", "app", 2, "/usr/include/c++/12/bits/vector.tcc", 9}));
  // Inlined library code that GCC's debug info names without its scope is told by its header.
  EXPECT_TRUE(is_allocation_plumbing(inlined("allocate", "app", "/usr/include/c++/12/bits/new_allocator.h")));
  EXPECT_TRUE(is_allocation_plumbing(
      inlined("nlohmann::json_abi_v3_11_2::basic_json<>::operator[](char const*)", "app", "/usr/include/nlohmann/json.hpp")));
  EXPECT_TRUE(is_allocation_plumbing(inlined("void* (anonymous namespace)::forward_new<>(std::atomic<void*>&, unsigned long)",
                                             "libtleak_preload.so", "/src/agent/src/interpose_new.cc")));
  EXPECT_FALSE(is_allocation_plumbing(inlined("load_rows", "app", "/src/app/include/rows.h")));
}

}  // namespace
}  // namespace tleak::diagnosis
