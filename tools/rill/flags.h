// A small command-line flag parser shared by the `rill` subcommands. Flags
// are bound to variables, then parsed in one call:
//
//   Flags flags("rill run", kUsage);
//   flags.Positional("MAIN", &files, 1, 1);
//   flags.String("--startup", &startup);
//   flags.StringList("--fetch", &fetches);
//   if (int rc = flags.Parse(args); rc >= 0) return rc;
//
// Accepted forms: "--name value", "--name=value", and for booleans "--name"
// or "--name=true|false". "--" ends the flags; "-h"/"--help" print the usage.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rill::cli {

class Flags {
 public:
  // `command` names the command in messages ("rill run"); `usage` is printed
  // for --help and after a usage error.
  Flags(std::string command, std::string usage);

  // Single-valued flags; giving one twice is an error. Names include the dashes.
  void String(const std::string& name, std::string* value);
  void Int(const std::string& name, int* value);
  void Int64(const std::string& name, int64_t* value);
  void Uint64(const std::string& name, uint64_t* value);
  void Double(const std::string& name, double* value);
  void Bool(const std::string& name, bool* value);
  // A flag that may be given many times; each value is appended in order.
  void StringList(const std::string& name, std::vector<std::string>* values);
  // The arguments that are not flags; Parse checks there are between min and
  // max of them (max < 0: no limit). `what` names them in messages ("FILE").
  void Positional(const std::string& what, std::vector<std::string>* values, int min, int max);

  // Parses `args` into the bound variables. Returns -1 when the command
  // should go on; otherwise the exit status it should return at once: 0
  // after printing the usage to stdout for --help, 2 after printing the
  // error and the usage to stderr for an unknown flag, a missing or
  // malformed value, or a wrong number of positional arguments.
  int Parse(const std::vector<std::string>& args);

  // Prints "<command>: <message>" and the usage to stderr and returns 2, for
  // usage errors a command finds after parsing (e.g. a malformed --feed).
  int UsageError(const std::string& message) const;

  const std::string& command() const { return command_; }
  const std::string& usage() const { return usage_; }

 private:
  struct Spec {
    std::string name;
    bool is_bool = false;
    bool repeated = false;
    // Stores a value; returns an empty string or why the value is bad.
    std::function<std::string(const std::string&)> set;
  };
  void Add(Spec spec);
  const Spec* Find(const std::string& name) const;

  std::string command_;
  std::string usage_;
  std::vector<Spec> specs_;
  std::string positional_what_ = "argument";
  std::vector<std::string>* positional_ = nullptr;
  int positional_min_ = 0;
  int positional_max_ = 0;
};

// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {}. Empty items are kept, for the
// caller's check to name.
std::vector<std::string> SplitCommas(const std::string& list);

}  // namespace rill::cli
