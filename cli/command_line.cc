#include "command_line.h"

#include <CLI/CLI.hpp>

#include "cli_error.h"

namespace tleak::cli {

OptionChecks OptionChecks::required() {
  option_->required();
  return *this;
}

OptionChecks OptionChecks::one_of(std::initializer_list<const char*> values) {
  option_->check(CLI::IsMember(std::vector<std::string>(values.begin(), values.end())));
  return *this;
}

OptionChecks OptionChecks::within_integer(std::int64_t low, std::int64_t high) {
  option_->check(CLI::Range(low, high));
  return *this;
}

OptionChecks OptionChecks::within_unsigned(std::uint64_t low, std::uint64_t high) {
  option_->check(CLI::Range(low, high));
  return *this;
}

OptionChecks OptionChecks::within_real(double low, double high) {
  option_->check(CLI::Range(low, high));
  return *this;
}

OptionChecks OptionChecks::one_value_each_time() {
  option_->allow_extra_args(false);
  return *this;
}

OptionChecks OptionChecks::default_in_help() {
  option_->capture_default_str();
  return *this;
}

OptionChecks Subcommand::option(const std::string& names, std::string& into,
                                const std::string& help) {
  return OptionChecks(app_->add_option(names, into, help));
}

OptionChecks Subcommand::option(const std::string& names, std::vector<std::string>& into,
                                const std::string& help) {
  return OptionChecks(app_->add_option(names, into, help));
}

OptionChecks Subcommand::option(const std::string& names, std::uint64_t& into,
                                const std::string& help) {
  return OptionChecks(app_->add_option(names, into, help));
}

OptionChecks Subcommand::option(const std::string& names, int& into, const std::string& help) {
  return OptionChecks(app_->add_option(names, into, help));
}

OptionChecks Subcommand::option(const std::string& names, double& into, const std::string& help) {
  return OptionChecks(app_->add_option(names, into, help));
}

void Subcommand::flag(const std::string& names, bool& into, const std::string& help) {
  app_->add_flag(names, into, help);
}

std::size_t Subcommand::count(const std::string& name) const { return app_->count(name); }

CommandLine::CommandLine(const std::string& description, const std::string& name,
                         const std::string& version)
    : app_(std::make_unique<CLI::App>(description, name)) {
  app_->require_subcommand(1);
  app_->set_version_flag("--version", version);
}

CommandLine::~CommandLine() = default;

Subcommand CommandLine::add_subcommand(const std::string& name, const std::string& description) {
  return Subcommand(app_->add_subcommand(name, description));
}

std::vector<std::string> CommandLine::subcommand_names() const {
  std::vector<std::string> names;
  for (const CLI::App* sub : app_->get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

CommandLine::Parsed CommandLine::parse(int argc, char** argv) {
  try {
    app_->parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return {"", app_->exit(e)};
  } catch (const CLI::CallForAllHelp& e) {
    return {"", app_->exit(e)};
  } catch (const CLI::CallForVersion& e) {
    return {"", app_->exit(e)};
  } catch (const CLI::ParseError& e) {
    throw UsageError(std::string(e.what()) + " (see tleak --help)");
  }
  for (const CLI::App* sub : app_->get_subcommands({})) {
    if (sub->parsed()) return {sub->get_name(), std::nullopt};
  }
  return {"", kExitUsage};  // require_subcommand(1) makes this unreachable
}

}  // namespace tleak::cli
