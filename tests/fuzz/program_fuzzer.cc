// libFuzzer target: feeds arbitrary bytes to the text and binary program
// parsers and validates whatever parses. rill::Error is the expected outcome
// for bad input; any other exception, a crash or a sanitizer report is a bug.
#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "rill/error.h"
#include "rill/program_io.h"
#include "rill/validate.h"

namespace {

// Validates and lists a parsed program; both must fail only with rill::Error.
void Check(const rill::proto::ProgramDesc& program) {
  const std::string listing = rill::FormatProgram(program);  // never throws
  (void)listing;
  try {
    rill::Validate(program);
  } catch (const rill::Error&) {
    // A rejected program: expected.
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);  // protobuf's parse warnings are noise here
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  rill::proto::ProgramDesc program;
  bool parsed = true;
  try {
    program = rill::ParseProgramText(input, "fuzz.pbtxt");
  } catch (const rill::Error&) {
    parsed = false;  // not a text program: expected
  }
  if (parsed) Check(program);
  parsed = true;
  try {
    program = rill::ParseProgramBinary(input, "fuzz.pb");
  } catch (const rill::Error&) {
    parsed = false;  // not a binary program: expected
  }
  if (parsed) Check(program);
  return 0;
}
