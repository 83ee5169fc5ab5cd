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

// The code of `python3 -c` or of a script from standard input is the user's, though it has no
// file; code of the same name that a library made with exec() is not, in any other program.
TEST(PythonFiles, AProgramsOwnCodeWithoutAFileIsTheUsers) {
  EXPECT_TRUE(python_file_is_users("<string>", "", "<string>"));
  EXPECT_TRUE(python_file_is_users("<stdin>", "/home/me/", "<stdin>"));
  EXPECT_FALSE(python_file_is_users("<string>", "", "<stdin>"));
  EXPECT_TRUE(python_file_is_users("/home/me/train.py", "", "<string>"));
  EXPECT_FALSE(python_file_is_users("/usr/lib/python3.11/threading.py", "", "<string>"));
}

TEST(PythonFiles, TheMainCodeIsReadFromCPythonsCommandLine) {
  using namespace std::string_view_literals;
  // By the file name CPython gives the code it finds.
  const auto main_code = [](std::string_view command_line) {
    return python_main_code_name(python_main("/usr/bin/python3.11", command_line).code);
  };
  EXPECT_EQ(main_code("python3\0-c\0print(1)\0"sv), "<string>");
  EXPECT_EQ(main_code("python3\0-Sc\0print(1)\0"sv), "<string>");
  EXPECT_EQ(main_code("python3\0-cprint(1)\0"sv), "<string>");
  EXPECT_EQ(main_code("python3\0-X\0dev\0-W\0error\0-c\0pass\0"sv), "<string>");
  EXPECT_EQ(main_code("python3\0-Xdev\0-c\0pass\0"sv), "<string>");
  EXPECT_EQ(main_code("python3\0--check-hash-based-pycs\0never\0-c\0pass\0"sv), "<string>");
  EXPECT_EQ(main_code("python3\0-\0"sv), "<stdin>");
  EXPECT_EQ(main_code("python3\0-u\0"sv), "<stdin>");
  EXPECT_EQ(main_code("python3\0"sv), "<stdin>");
  EXPECT_EQ(main_code("python3\0--\0"sv), "<stdin>");
  EXPECT_EQ(main_code("python3\0train.py\0-c\0"sv), "");
  EXPECT_EQ(main_code("python3\0-u\0train.py\0"sv), "");
  EXPECT_EQ(main_code("python3\0--\0-c\0"sv), "");  // a script named "-c"
  EXPECT_EQ(main_code("python3\0-m\0pytest\0-c\0x\0"sv), "");
  EXPECT_EQ(main_code("python3\0-W\0-c\0train.py\0"sv), "");  // "-c" is -W's value
  EXPECT_EQ(main_code("python3\0-c\0pass"sv), "<string>");  // no final NUL
  EXPECT_EQ(main_code(""sv), "");
  // Not CPython's command line: a program embedding the interpreter, or any other.
  EXPECT_EQ(python_main("/usr/bin/myapp", "myapp\0-c\0config\0"sv).code, PythonMainCode::kNone);
  EXPECT_EQ(python_main("/opt/venv/bin/python", "python\0-c\0pass\0"sv).code, PythonMainCode::kString);
}

// -E and -I (alone or among other short options, before what the interpreter runs) make it ignore
// PYTHON* variables, PYTHONMALLOC among them: its small objects stay pymalloc's whatever it says.
TEST(PythonFiles, OptionsThatIgnoreTheEnvironmentAreSeen) {
  using namespace std::string_view_literals;
  const auto ignores = [](std::string_view command_line) {
    return python_main("/usr/bin/python3.11", command_line).ignores_environment;
  };
  EXPECT_TRUE(ignores("python3\0-E\0train.py\0"sv));
  EXPECT_TRUE(ignores("python3\0-I\0-c\0pass\0"sv));
  EXPECT_TRUE(ignores("python3\0-uIB\0-m\0pytest\0"sv));
  EXPECT_TRUE(ignores("python3\0-Ec\0pass\0"sv));
  EXPECT_TRUE(ignores("python3\0-E\0"sv));  // standard input
  EXPECT_FALSE(ignores("python3\0train.py\0-E\0"sv));  // the script's argument
  EXPECT_FALSE(ignores("python3\0-c\0pass\0-I\0"sv));
  EXPECT_FALSE(ignores("python3\0-X\0importtime\0-W\0error\0x.py\0"sv));  // values, not options
  EXPECT_FALSE(ignores("python3\0-WE\0x.py\0"sv));  // -W's value "E"
  EXPECT_FALSE(ignores("python3\0-u\0train.py\0"sv));
  EXPECT_FALSE(python_main("/usr/bin/myapp", "myapp\0-E\0"sv).ignores_environment);
}

// What a Python process runs instead of code without a file: the script as given, or the -m
// module; the report is named by it (tleak run -- python3 train.py is "train.py", not "python3.11").
TEST(PythonFiles, TheScriptOrModuleIsReadFromCPythonsCommandLine) {
  using namespace std::string_view_literals;
  const auto target = [](std::string_view command_line) {
    return python_main("/usr/bin/python3.11", command_line).target;
  };
  EXPECT_EQ(target("python3\0train.py\0--epochs\0003\0"sv), "train.py");
  EXPECT_EQ(target("python3\0-u\0-X\0dev\0/home/me/train.py\0"sv), "/home/me/train.py");
  EXPECT_EQ(target("python3\0--\0-c\0"sv), "-c");  // a script named "-c"
  EXPECT_EQ(target("python3\0-W\0-c\0train.py\0"sv), "train.py");
  EXPECT_EQ(target("python3\0-m\0pytest\0-x\0"sv), "pytest");
  EXPECT_EQ(target("python3\0-Bmhttp.server\0"sv), "http.server");
  EXPECT_EQ(target("python3\0-m\0"sv), "");  // CPython refuses it: no module named
  EXPECT_EQ(target("python3\0-c\0pass\0"sv), "");
  // multiprocessing's children by its spawn and forkserver methods: named by the module they start
  // from, whose code (not the -c bootstrap's) they run.
  EXPECT_EQ(target("/usr/bin/python3\0-B\0-c\0from multiprocessing.spawn import spawn_main; "
                   "spawn_main(tracker_fd=6, pipe_handle=13)\0--multiprocessing-fork\0"sv),
            "multiprocessing.spawn");
  EXPECT_EQ(target("python3\0-Bc\0from multiprocessing.forkserver import main; main(3, 5)\0"sv),
            "multiprocessing.forkserver");
  EXPECT_EQ(target("python3\0-cfrom multiprocessing.resource_tracker import main;main(3)\0"sv),
            "multiprocessing.resource_tracker");
  EXPECT_EQ(python_main("/usr/bin/python3.11", "python3\0-c\0from multiprocessing.spawn import spawn_main\0"sv).code,
            PythonMainCode::kNone);
  EXPECT_EQ(python_main("/usr/bin/python3.11", "python3\0-c\0from numpy import ones\0"sv).code, PythonMainCode::kString);
  EXPECT_EQ(target("python3\0-c\0from numpy import ones; print(ones(3))\0"sv), "");
  EXPECT_EQ(target("python3\0-c\0from multiprocessing.spawn\0"sv), "");  // no import: not multiprocessing's
  EXPECT_EQ(target("python3\0-c\0"sv), "");
  EXPECT_EQ(target("python3\0-\0script.py\0"sv), "");  // standard input; script.py is an argument
  EXPECT_EQ(target("python3\0"sv), "");
  EXPECT_EQ(python_main("/usr/bin/myapp", "myapp\0train.py\0"sv).target, "");
  EXPECT_EQ(python_main("/usr/bin/python3.11", "python3\0-m\0pytest\0"sv).code, PythonMainCode::kNone);
}

TEST(PythonFiles, TheImportMachineryIsToldApart) {
  EXPECT_TRUE(python_file_is_import_machinery("<frozen importlib._bootstrap>"));
  EXPECT_TRUE(python_file_is_import_machinery("<frozen importlib._bootstrap_external>"));
  EXPECT_FALSE(python_file_is_import_machinery("<frozen runpy>"));
  EXPECT_FALSE(python_file_is_import_machinery("/usr/lib/python3.11/importlib/__init__.py"));
}

}  // namespace
}  // namespace tleak::agent
