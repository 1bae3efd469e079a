// The checkpoint file format: a versioned header, the saved tensors (a
// serialized proto::TensorSet) and a checksum over everything before it, so a
// damaged, truncated or foreign file is refused with what is wrong instead of
// loading wrong values. Plain functions, safe to call from any thread.
//
// Format version 1, integers little-endian:
//   offset  0  "RILLCKPT"                 8 bytes
//   offset  8  format version (1)         uint32
//   offset 12  step                       int64: the training step the values are
//                                         at, or kNoStep (-1) when there is none
//   offset 20  length of the tensors      uint64
//   offset 28  the tensors                a serialized proto::TensorSet
//   then       CRC-32 of every byte above uint32 (zlib's crc32)
// Files of the older, unversioned format (a bare TensorSet: no header, no
// checksum) are refused with a message saying the format changed.
//
//   WriteCheckpointFile(path, tensors, /*step=*/40);    // atomic replace
//   CheckpointFile file = ReadCheckpointFile(path);      // throws kParse naming path
#pragma once

#include <cstdint>
#include <string>

#include "rill/proto/program.pb.h"

namespace rill {

inline constexpr uint32_t kCheckpointFormatVersion = 1;
// The step of a checkpoint saved outside a training loop.
inline constexpr int64_t kNoStep = -1;

struct CheckpointFile {
  int64_t step = kNoStep;
  proto::TensorSet tensors;
};

// The bytes of a checkpoint file. Throws kIo when the tensors cannot be
// serialized (over 2 GiB).
std::string EncodeCheckpoint(const proto::TensorSet& tensors, int64_t step,
                             const std::string& path);
// The contents of checkpoint `bytes`, checked: header, version, length,
// checksum, then the tensors' encoding. Throws kParse whose message starts
// with `path` and says which check failed.
CheckpointFile DecodeCheckpoint(const std::string& bytes, const std::string& path);

// Replaces `path` atomically (rill/program_io.h's WriteFileAtomically): a
// failure leaves the old file as it was. Throws kIo naming the path.
void WriteCheckpointFile(const std::string& path, const proto::TensorSet& tensors, int64_t step);
// Reads and checks a checkpoint file. Throws kIo naming the path when it
// cannot be read, kParse (as DecodeCheckpoint) when it fails a check.
CheckpointFile ReadCheckpointFile(const std::string& path);

}  // namespace rill
