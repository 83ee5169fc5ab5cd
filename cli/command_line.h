// The command line as the commands declare it: subcommands, their options and the checks on them.
// CLI11 does the parsing, but only command_line.cc includes it: its templates took 9 s of the
// compiler's time in every file that declared an option with them (12 s under the sanitizers),
// three quarters of the command line's build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace tleak::cli {

// One declared option; each call adds a check and returns the option for the next.
class OptionChecks {
 public:
  explicit OptionChecks(CLI::Option* option) : option_(option) {}
  OptionChecks required();
  OptionChecks one_of(std::initializer_list<const char*> values);
  // A value in [low, high], an integer or a real as the option is.
  template <typename Number>
  OptionChecks within(Number low, Number high) {
    if constexpr (std::is_floating_point_v<Number>) {
      return within_real(static_cast<double>(low), static_cast<double>(high));
    } else if constexpr (std::is_unsigned_v<Number>) {
      return within_unsigned(static_cast<std::uint64_t>(low), static_cast<std::uint64_t>(high));
    } else {
      return within_integer(static_cast<std::int64_t>(low), static_cast<std::int64_t>(high));
    }
  }
  // A repeatable option takes one value per occurrence ("--fail-on leak --fail-on growth"), so that
  // a word after it is not swallowed as a second value.
  OptionChecks one_value_each_time();
  // --help shows the default value.
  OptionChecks default_in_help();

 private:
  OptionChecks within_integer(std::int64_t low, std::int64_t high);
  OptionChecks within_unsigned(std::uint64_t low, std::uint64_t high);
  OptionChecks within_real(double low, double high);
  CLI::Option* option_;
};

// A subcommand's options. Names as CLI11 takes them: "--output,-o", or a bare word for a
// positional.
class Subcommand {
 public:
  explicit Subcommand(CLI::App* app) : app_(app) {}
  OptionChecks option(const std::string& names, std::string& into, const std::string& help);
  OptionChecks option(const std::string& names, std::vector<std::string>& into,
                      const std::string& help);
  OptionChecks option(const std::string& names, std::uint64_t& into, const std::string& help);
  OptionChecks option(const std::string& names, int& into, const std::string& help);
  OptionChecks option(const std::string& names, double& into, const std::string& help);
  void flag(const std::string& names, bool& into, const std::string& help);
  // How many times the option was given (after parsing).
  std::size_t count(const std::string& name) const;

 private:
  CLI::App* app_;
};

// What a subcommand runs once the command line parsed; returns the process's exit code.
using Command = std::function<int()>;

class CommandLine {
 public:
  CommandLine(const std::string& description, const std::string& name, const std::string& version);
  ~CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  Subcommand add_subcommand(const std::string& name, const std::string& description);
  std::vector<std::string> subcommand_names() const;
  // The subcommand argv names, its options parsed into their variables. Help and --version are
  // printed here and give the exit code to end with; a parse error throws UsageError.
  struct Parsed {
    std::string subcommand;
    std::optional<int> exit_code;
  };
  Parsed parse(int argc, char** argv);

 private:
  std::unique_ptr<CLI::App> app_;
};

}  // namespace tleak::cli
