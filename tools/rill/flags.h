// What the `rill` subcommands share for their flags. CLI11 parses them: main
// builds one CLI::App, each command adds its subcommand with its flags and
// help (tools/rill/commands.h). Here: validators whose messages name the
// bad value the way Rill's other messages do, the usage error a command
// raises after parsing, and list splitting.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace rill::cli {

// A usage error a command finds once CLI11 has parsed its flags (a bad
// combination of flags, a malformed --feed). main prints it as it prints
// CLI11's errors: "rill CMD: message", a pointer to --help, exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Accepts an integer >= min: "--epochs: must be >= 1, got '0'".
// `source`, when given, names where else the value may come from (an
// environment variable) in the message.
CLI::Validator AtLeast(int64_t min, const std::string& source = "");
// Accepts an unsigned integer without a sign (CLI11 alone would wrap -1 around).
CLI::Validator NonNegative();
// Accepts a finite number > 0: "--lr: must be a finite number > 0, got '0'".
CLI::Validator Positive();

// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {}. Empty items are kept, for the
// caller's check to name.
std::vector<std::string> SplitCommas(const std::string& list);

}  // namespace rill::cli
