// rill validate: checks a program file the way the executor does before a run.
#include <iostream>
#include <string>
#include <vector>

#include "rill/error.h"
#include "rill/program_io.h"
#include "rill/validate.h"
#include "tools/rill/commands.h"
#include "tools/rill/flags.h"

namespace rill::cli {
namespace {

constexpr const char* kUsage = R"(usage: rill validate FILE
  Parses and validates a program: op types, slots, declared variables,
  attribute types and ranges, shapes by inference, sub-block indices.
  Prints "ok" and exits 0, or prints the first problem (block, op index,
  op type, variable) and exits 1.
)";

}  // namespace

int ValidateCommand(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  Flags flags("rill validate", kUsage);
  flags.Positional("FILE", &files, 1, 1);
  if (int rc = flags.Parse(args); rc >= 0) return rc;
  const proto::ProgramDesc program = LoadProgram(files[0]);
  try {
    Validate(program);
  } catch (const Error& e) {
    throw Error(e.code(), files[0] + ": " + e.message());
  }
  std::cout << "ok\n";
  return kExitOk;
}

}  // namespace rill::cli
