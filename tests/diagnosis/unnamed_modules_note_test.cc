#include "unnamed_modules_note.h"

#include <gtest/gtest.h>

namespace tleak::diagnosis {
namespace {

Frame frame(const std::string& function, const std::string& module, FrameKind kind = FrameKind::kNative) {
  Frame f;
  f.function = function;
  f.module = module;
  f.kind = kind;
  return f;
}

SiteReport site(std::vector<Frame> frames) {
  SiteReport s;
  s.frames = std::move(frames);
  return s;
}

TEST(UnnamedModulesNote, NoneWhenEveryModuleWasRead) {
  EXPECT_EQ(unnamed_modules_note({site({frame("main", "prog"), frame("??", "libjit.so")})}), "");
  // A Python function named so by its program is no reason of the symbolizer's.
  EXPECT_EQ(unnamed_modules_note({site({frame("?? (x)", "script.py", FrameKind::kPython)})}), "");
}

// Each module once, in name order, with its own reason; past four, how many more.
TEST(UnnamedModulesNote, NamesEachModuleOnceWithItsReason) {
  const auto opened = [](const std::string& m) { return frame("?? (" + m + " could not be opened: Too many open files)", m); };
  EXPECT_EQ(unnamed_modules_note({site({opened("libb.so"), frame("main", "prog")}),
                                  site({opened("libb.so"), frame("?? (liba.so changed since the run)", "liba.so")})}),
            "the symbols of 2 modules could not be read, so their frames are named by their place in them: liba.so "
            "changed since the run; libb.so could not be opened: Too many open files");
  EXPECT_EQ(unnamed_modules_note({site({opened("l1"), opened("l2"), opened("l3"), opened("l4"), opened("l5"), opened("l6")})}),
            "the symbols of 6 modules could not be read, so their frames are named by their place in them: l1 could not "
            "be opened: Too many open files; l2 could not be opened: Too many open files; l3 could not be opened: Too "
            "many open files; l4 could not be opened: Too many open files; and 2 more");
}

}  // namespace
}  // namespace tleak::diagnosis
