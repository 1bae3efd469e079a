// The checkpoint file format (rill/checkpoint_file.h): header, tensors, CRC-32.
#include "rill/checkpoint_file.h"

#include <google/protobuf/stubs/logging.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <limits>

#include "rill/error.h"
#include "rill/program_io.h"

namespace rill {
namespace {

constexpr char kMagic[8] = {'R', 'I', 'L', 'L', 'C', 'K', 'P', 'T'};
constexpr size_t kVersionAt = 8, kStepAt = 12, kLengthAt = 20, kHeaderBytes = 28;
constexpr size_t kChecksumBytes = 4;

void PutLittleEndian(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t GetLittleEndian(const std::string& in, size_t at, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(in[at + static_cast<size_t>(i)]))
             << (8 * i);
  }
  return value;
}

uint32_t Crc32(const char* data, size_t size) {
  return static_cast<uint32_t>(
      crc32_z(crc32_z(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(data), size));
}

std::string Hex(uint32_t value) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

// A file without the header: the old format (a bare TensorSet) or something else.
[[noreturn]] void FailWithoutHeader(const std::string& bytes, const std::string& path) {
  if (bytes.empty()) Fail(ErrorCode::kParse, path, ": empty file (0 bytes), not a checkpoint");
  proto::TensorSet legacy;
  google::protobuf::LogSilencer quiet;
  if (legacy.ParseFromString(bytes) && legacy.tensors_size() > 0 &&
      !legacy.tensors(0).name().empty()) {
    Fail(ErrorCode::kParse, path,
         ": a checkpoint in the old, unversioned format (no header, no checksum); the checkpoint "
         "format changed (version ",
         kCheckpointFormatVersion, " adds a version, the step and a checksum): save it again");
  }
  Fail(ErrorCode::kParse, path, ": not a Rill checkpoint (", bytes.size(),
       " bytes that do not start with \"RILLCKPT\")");
}

}  // namespace

std::string EncodeCheckpoint(const proto::TensorSet& tensors, int64_t step,
                             const std::string& path) {
  RILL_CHECK(step >= kNoStep, kInvalidArgument, "cannot save checkpoint ", path, " at step ", step);
  std::string payload;
  RILL_CHECK(tensors.SerializeToString(&payload), kIo, path,
             ": cannot serialize the checkpoint (over 2 GiB?)");
  std::string bytes(kMagic, sizeof kMagic);
  bytes.reserve(kHeaderBytes + payload.size() + kChecksumBytes);
  PutLittleEndian(&bytes, kCheckpointFormatVersion, 4);
  PutLittleEndian(&bytes, static_cast<uint64_t>(step), 8);
  PutLittleEndian(&bytes, payload.size(), 8);
  bytes += payload;
  PutLittleEndian(&bytes, Crc32(bytes.data(), bytes.size()), 4);
  return bytes;
}

CheckpointFile DecodeCheckpoint(const std::string& bytes, const std::string& path) {
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    FailWithoutHeader(bytes, path);
  }
  if (bytes.size() < kHeaderBytes + kChecksumBytes) {
    Fail(ErrorCode::kParse, path, ": truncated: ", bytes.size(), " bytes, less than the ",
         kHeaderBytes + kChecksumBytes, " of the header and checksum");
  }
  const uint64_t version = GetLittleEndian(bytes, kVersionAt, 4);
  if (version != kCheckpointFormatVersion) {
    Fail(ErrorCode::kParse, path, ": checkpoint format version ", version,
         "; this Rill reads version ", kCheckpointFormatVersion);
  }
  const uint64_t length = GetLittleEndian(bytes, kLengthAt, 8);
  const uint64_t holds = bytes.size() - kHeaderBytes - kChecksumBytes;
  if (length != holds) {
    Fail(ErrorCode::kParse, path,
         length > holds ? ": truncated: the header announces " : ": the header announces ", length,
         " bytes of tensors, the file holds ", holds);
  }
  const size_t end = kHeaderBytes + length;
  const uint32_t stored = static_cast<uint32_t>(GetLittleEndian(bytes, end, 4));
  const uint32_t computed = Crc32(bytes.data(), end);
  if (stored != computed) {
    Fail(ErrorCode::kParse, path, ": checksum mismatch (stored ", Hex(stored), ", computed ",
         Hex(computed), "): the file is damaged");
  }
  CheckpointFile file;
  file.step = static_cast<int64_t>(GetLittleEndian(bytes, kStepAt, 8));
  RILL_CHECK(file.step >= kNoStep, kParse, path, ": invalid step ", file.step);
  google::protobuf::LogSilencer quiet;
  if (length > static_cast<uint64_t>(std::numeric_limits<int>::max()) ||
      !file.tensors.ParseFromArray(bytes.data() + kHeaderBytes, static_cast<int>(length))) {
    Fail(ErrorCode::kParse, path, ": the ", length,
         " bytes of tensors do not parse, though their checksum matches");
  }
  return file;
}

void WriteCheckpointFile(const std::string& path, const proto::TensorSet& tensors, int64_t step) {
  WriteFileAtomically(path, EncodeCheckpoint(tensors, step, path));
}

CheckpointFile ReadCheckpointFile(const std::string& path) {
  return DecodeCheckpoint(ReadFileToString(path), path);
}

}  // namespace rill
