// Reading, writing and printing programs: protobuf text and binary formats,
// with parse errors that name the file, line and column, plus a readable
// one-op-per-line listing for `rill print`. Also the small file helpers the
// other io files share (whole-file reads, atomic writes).
#pragma once

#include <string>

#include "rill/proto/program.pb.h"

namespace rill {

// Parses a program in protobuf text format. On failure throws
// rill::Error(kParse) with "LINE:COL: message" (1-based), prefixed by
// "SOURCE:" when `source` (a file name, for messages) is not empty.
proto::ProgramDesc ParseProgramText(const std::string& text, const std::string& source = "");

// Parses a serialized (binary) ProgramDesc. Unknown fields are kept (newer
// writers). Throws rill::Error(kParse) naming `source` when the bytes are not
// a valid ProgramDesc.
proto::ProgramDesc ParseProgramBinary(const std::string& bytes, const std::string& source = "");

// Loads a program file, choosing the format by extension: .pbtxt, .txt and
// .prototxt are text; .pb and .bin are binary; anything else is tried as
// binary, then as text. Throws kIo naming the path when the file cannot be
// read, kParse (with file, line and column for text) when it does not parse.
// Does not validate the program.
proto::ProgramDesc LoadProgram(const std::string& path);

// Writes a program atomically: text format for the text extensions above,
// binary otherwise. Throws kIo naming the path on failure.
void SaveProgram(const proto::ProgramDesc& program, const std::string& path);

// The program in protobuf text format (what SaveProgram writes to a .pbtxt).
std::string ProgramToText(const proto::ProgramDesc& program);

// A readable listing of a program, one block after another:
//   block 0 (parent -1)
//     var x: float32[-1, 784]  (stop_gradient)
//     var w1: float32[784, 100]  (persistable, parameter)
//     0: mul(X=[x], Y=[w1]) -> (Out=[h1])  {x_num_col_dims=1}
// A placed block says where: "block 1 (parent 0, placed on pserver 0)", or
// "pserver (any)" for a placeable block the transpiler has not placed yet.
// Never throws on a malformed program: invalid values are printed as such.
std::string FormatProgram(const proto::ProgramDesc& program);

// True when `path` has one of the text-format extensions (.pbtxt, .txt, .prototxt).
bool IsTextProgramPath(const std::string& path);

// The whole contents of a file. Throws rill::Error(kIo) naming the path when
// it is missing or unreadable.
std::string ReadFileToString(const std::string& path);

// Replaces `path` with `contents` atomically: writes a temporary file in the
// same directory, flushes it to disk and renames it over `path`, so readers
// see the old file or the new one, never a partial one. Throws
// rill::Error(kIo) naming the path on failure (the temporary file is removed).
void WriteFileAtomically(const std::string& path, const std::string& contents);

// Checks up front that WriteFileAtomically(path, ...) can succeed later: `path`
// is not a directory, its directory exists and a file can be created in it (a
// probe file is created there and removed). Throws rill::Error(kIo) naming the
// path and the cause (the system's error text).
void CheckWritable(const std::string& path);

}  // namespace rill
