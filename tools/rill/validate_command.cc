// rill validate: checks a program file the way the executor does before a run.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "rill/error.h"
#include "rill/program_io.h"
#include "rill/validate.h"
#include "tools/rill/commands.h"
#include "tools/rill/flags.h"

namespace rill::cli {

Command AddValidateCommand(CLI::App& rill) {
  auto file = std::make_shared<std::string>();
  CLI::App* app =
      rill.add_subcommand("validate", "check a program; prints \"ok\" or the first problem");
  app->add_option("FILE", *file, "a program file")->required();
  app->footer(
      "Parses and validates a program: op types, slots, declared variables,\n"
      "attribute types and ranges, shapes by inference, sub-block indices.\n"
      "Prints \"ok\" and exits 0, or prints the first problem (block, op index,\n"
      "op type, variable) and exits 1.");
  return {app, [file] {
            const proto::ProgramDesc program = LoadProgram(*file);
            try {
              Validate(program);
            } catch (const Error& e) {
              throw Error(e.code(), *file + ": " + e.message());
            }
            std::cout << "ok\n";
            return kExitOk;
          }};
}

}  // namespace rill::cli
