// NumPy .npy files (format versions 1.0, 2.0 and 3.0): little-endian
// float32, float64, int32 and int64 arrays in C (row-major) order, the
// interchange format of `rill run` feeds and fetches.
#pragma once

#include <string>

#include "rill/tensor.h"

namespace rill {

// Reads a .npy file into a new CPU tensor. Throws rill::Error naming the file:
// kIo when it cannot be read; kParse for a bad magic string, an unsupported
// version or a malformed header; kUnimplemented for Fortran order,
// big-endian data or an element type other than <f4, <f8, <i4, <i8;
// kParse when the data is shorter or longer than the header's shape says.
Tensor ReadNpy(const std::string& path);

// Parses the bytes of a .npy file (`source` names it in messages). Same errors as ReadNpy.
Tensor ParseNpy(const std::string& bytes, const std::string& source = "");

// Writes `tensor` (which must hold a value) as a version 1.0 .npy file
// (2.0 when the header needs it), atomically. Throws rill::Error naming the
// file on failure.
void WriteNpy(const std::string& path, const Tensor& tensor);

// The bytes WriteNpy writes.
std::string SerializeNpy(const Tensor& tensor);

}  // namespace rill
