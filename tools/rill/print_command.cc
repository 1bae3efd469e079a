// rill print: shows a program file as a readable listing, one op per line.
#include <iostream>
#include <string>
#include <vector>

#include "rill/program_io.h"
#include "tools/rill/commands.h"
#include "tools/rill/flags.h"

namespace rill::cli {
namespace {

constexpr const char* kUsage = R"(usage: rill print FILE [--text]
  Prints the blocks of a program: each variable with its type, shape and
  flags, then each op as  INDEX: TYPE(SLOT=[vars], ...) -> (SLOT=[vars])  {attrs}.
  FILE is protobuf text (.pbtxt, .txt, .prototxt) or binary (.pb, .bin; other
  extensions are tried as binary, then text). The program is not validated.
  --text    print protobuf text format instead (converts a binary program)
)";

}  // namespace

int PrintCommand(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  bool text = false;
  Flags flags("rill print", kUsage);
  flags.Positional("FILE", &files, 1, 1);
  flags.Bool("--text", &text);
  if (int rc = flags.Parse(args); rc >= 0) return rc;
  const proto::ProgramDesc program = LoadProgram(files[0]);
  std::cout << (text ? ProgramToText(program) : FormatProgram(program));
  return kExitOk;
}

}  // namespace rill::cli
