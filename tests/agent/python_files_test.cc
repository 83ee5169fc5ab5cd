// The one rule of whose a Python file is, read by the report's labels and the agent's search for
// the user's frame alike (tleak/agent/python_files.h).
#include "tleak/agent/python_files.h"

#include <gtest/gtest.h>

namespace tleak::agent {
namespace {

TEST(PythonFiles, TheUsersFilesAreTheOnesNoInstallPutThere) {
  EXPECT_TRUE(python_file_is_users("/home/me/train.py", ""));
  EXPECT_TRUE(python_file_is_users("/work/main/tests/programs/python_lib/deep_helper.py", ""));
  EXPECT_FALSE(python_file_is_users("/usr/lib/python3/dist-packages/torch/nn/modules/linear.py", ""));
  EXPECT_FALSE(python_file_is_users("/usr/lib/python3.11/importlib/__init__.py", ""));
  EXPECT_FALSE(python_file_is_users("/opt/venv/lib/python3.11/site-packages/numpy/core/numeric.py", ""));
  EXPECT_FALSE(python_file_is_users("<frozen importlib._bootstrap>", ""));
  EXPECT_FALSE(python_file_is_users("<string>", ""));
  EXPECT_FALSE(python_file_is_users("", ""));
}

TEST(PythonFiles, AFocusIsAPrefixAndNothingElse) {
  const std::string_view focus = "/work/main/tests/programs/deep_calls.py";
  EXPECT_TRUE(python_file_is_users("/work/main/tests/programs/deep_calls.py", focus));
  EXPECT_FALSE(python_file_is_users("/work/main/tests/programs/python_lib/deep_helper.py", focus));
  // Under --focus an installed package can be the user's too.
  EXPECT_TRUE(python_file_is_users("/usr/lib/python3/dist-packages/torch/nn/modules/linear.py", "/usr/lib/python3/dist-packages/torch/"));
}

TEST(PythonFiles, TheImportMachineryIsToldApart) {
  EXPECT_TRUE(python_file_is_import_machinery("<frozen importlib._bootstrap>"));
  EXPECT_TRUE(python_file_is_import_machinery("<frozen importlib._bootstrap_external>"));
  EXPECT_FALSE(python_file_is_import_machinery("<frozen runpy>"));
  EXPECT_FALSE(python_file_is_import_machinery("/usr/lib/python3.11/importlib/__init__.py"));
}

}  // namespace
}  // namespace tleak::agent
