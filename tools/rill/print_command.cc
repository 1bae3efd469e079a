// rill print: shows a program file as a readable listing, one op per line.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "rill/program_io.h"
#include "tools/rill/commands.h"
#include "tools/rill/flags.h"

namespace rill::cli {

Command AddPrintCommand(CLI::App& rill) {
  struct Flags {
    std::string file;
    bool text = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = rill.add_subcommand("print", "show a program, one op per line");
  app->add_option("FILE", flags->file,
                  "a program: protobuf text (.pbtxt, .txt, .prototxt) or binary (.pb, .bin;\n"
                  "other extensions are tried as binary, then text)")
      ->required();
  app->add_flag("--text", flags->text,
                "print protobuf text format instead (converts a binary program)");
  app->footer(
      "Prints the blocks of a program: each variable with its type, shape and\n"
      "flags, then each op as  INDEX: TYPE(SLOT=[vars], ...) -> (SLOT=[vars])  {attrs}.\n"
      "The program is not validated.");
  return {app, [flags] {
            const proto::ProgramDesc program = LoadProgram(flags->file);
            std::cout << (flags->text ? ProgramToText(program) : FormatProgram(program));
            return kExitOk;
          }};
}

}  // namespace rill::cli
