// The call a native frame's column points at, read from its source line: wherever a compiler puts
// the column of a call (GCC: its "(" or its ")"; clang: its callee's name), the quote is the call.
#include "source_expression.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tleak::diagnosis {
namespace {

class SourceExpression : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = (std::filesystem::temp_directory_path() / ("tleak_source_expression_" + std::to_string(getpid()) + ".cc")).string();
    std::ofstream(file_) << "int main() {\n"
                            "    auto a = std::make_shared<Node>(); auto b = std::make_shared<Node>();\n"
                            "  keep(rows.emplace_back(std::vector<std::pair<int, int>>(3)), p->grow(n, f(2)));\n"
                            "  x = 1 + 2;\n"
                            "  broken(1, 2\n"
                            "  values[index] = 3;\n"
                            "  log(\"\u00e9t\u00e9\u00e9t\u00e9\");\n";
  }
  void TearDown() override { std::filesystem::remove(file_); }

  // The quote of a native frame at `line`, `column` (1-based), as a via line gives it.
  std::optional<std::string> at(int line, int column, std::size_t max_bytes = 48) const {
    Frame frame;
    frame.file = file_;
    frame.line = line;
    frame.column = column;
    return source_expression(frame, max_bytes);
  }
  // The 1-based column of `text`'s first byte (its `nth` occurrence) on `line`.
  int column_of(int line, const std::string& text, int nth = 1) const {
    std::ifstream in(file_);
    std::string s;
    for (int n = 0; n < line; ++n) std::getline(in, s);
    std::size_t found = std::string::npos;
    for (int k = 0; k < nth; ++k) found = s.find(text, found == std::string::npos ? 0 : found + 1);
    return static_cast<int>(found) + 1;
  }

  std::string file_;
};

TEST_F(SourceExpression, ACallIsQuotedFromItsParenthesesOrItsName) {
  const std::string call = "std::make_shared<Node>()";
  // GCC's column for the first call: its ")"; the second's "(", clang's the callee's name.
  EXPECT_EQ(at(2, column_of(2, ")")), call);
  EXPECT_EQ(at(2, column_of(2, "(", 2)), call);
  EXPECT_EQ(at(2, column_of(2, "std::", 2)), call);
  EXPECT_EQ(at(2, column_of(2, "make_shared", 2)), call);
}

TEST_F(SourceExpression, MembersTemplatesAndNestedCallsStayWhole) {
  EXPECT_EQ(at(3, column_of(3, "rows"), 80), "rows.emplace_back(std::vector<std::pair<int, int>>(3))");
  EXPECT_EQ(at(3, column_of(3, "std::vector")), "std::vector<std::pair<int, int>>(3)");
  EXPECT_EQ(at(3, column_of(3, "(3)")), "std::vector<std::pair<int, int>>(3)");
  EXPECT_EQ(at(3, column_of(3, "p->grow")), "p->grow(n, f(2))");
  EXPECT_EQ(at(3, column_of(3, "(n,")), "p->grow(n, f(2))");
  EXPECT_EQ(at(3, column_of(3, "f(2)")), "f(2)");
  // Cut at the longest quote asked for, never inside a character ("é" is two bytes: a cut at 6 bytes
  // would split the first).
  EXPECT_EQ(at(3, column_of(3, "rows"), 10), "rows.empla...");
  EXPECT_EQ(at(7, column_of(7, "log")), "log(\"\u00e9t\u00e9\u00e9t\u00e9\")");
  EXPECT_EQ(at(7, column_of(7, "log"), 6), "log(\"...");
}

TEST_F(SourceExpression, NoCallThereIsNoQuote) {
  EXPECT_EQ(at(4, column_of(4, "1 + 2")), std::nullopt);      // no call at all
  EXPECT_EQ(at(5, column_of(5, "broken")), std::nullopt);     // the call does not end on its line
  EXPECT_EQ(at(6, column_of(6, "values")), std::nullopt);     // a name, but no call
  EXPECT_EQ(at(1, 200), std::nullopt);                        // past the line's end
  EXPECT_EQ(at(40, 1), std::nullopt);                         // past the file's end
}

}  // namespace
}  // namespace tleak::diagnosis
