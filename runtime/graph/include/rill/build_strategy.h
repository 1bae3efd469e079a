// BuildStrategy: how the actor executor builds its graph over several places —
// how gradients are merged, fused and compressed — and StreamAssignment, how
// ops are spread over a place's streams (ExecutionStrategy).
#pragma once

#include <cstdint>
#include <string>

namespace rill {

enum class ReduceStrategy {
  kAllReduce,  // every place keeps the parameters and updates them
  kReduce,     // one copy of each parameter, updated by its owner place
};

// Each place's contribution to a gradient merge quantized to int8 or int4
// codes, one float scale per 256 values, with error feedback (the details:
// runtime/graph/gradient_compression.h).
enum class GradientCompression { kNone, kInt8, kInt4 };

// "none", "int8", "int4".
const char* GradientCompressionName(GradientCompression kind);
// Throws rill::Error kInvalidArgument naming `text` and the choices.
GradientCompression ParseGradientCompression(const std::string& text);

// Gradients with fewer elements than this stay float32 (their scales would
// be a large part of their bytes, and biases are where precision matters).
inline constexpr int64_t kCompressionMinElements = 4096;

struct BuildStrategy {
  ReduceStrategy reduce = ReduceStrategy::kAllReduce;
  // Gradients under this many bytes are merged together, in buckets of up to
  // this size (0: every gradient on its own).
  int64_t fuse_bytes = 256 * 1024;
  // The same across processes (collective data parallelism: the buckets of
  // process_allreduce ops). Larger, because a collective across processes
  // costs network round trips (1-4 ms for a Gloo allreduce between two
  // processes on loopback, whatever its size up to a few MB), which overlap
  // with backward cannot hide when every core computes: the MLP trains 1.2x
  // to 1.7x faster on 2 ranks in one bucket than in buckets of 256 KiB.
  int64_t process_fuse_bytes = 4 * 1024 * 1024;
  // Each place's contribution to a merge is quantized (with its own error
  // feedback) and the merge sums what the codes read back, in float32; the
  // result goes back at full precision. Gradients with fewer elements than
  // compression_min_elements (selected rows: rows of the dense tensor times
  // its width) stay float32.
  GradientCompression gradient_compression = GradientCompression::kNone;
  int64_t compression_min_elements = kCompressionMinElements;
};

// How ops are spread over the streams of a place.
enum class StreamAssignment {
  kCostModel,   // list scheduling over estimated costs (runtime/graph/stream_assignment.h)
  kRoundRobin,  // op i on stream i % streams: the most cross-stream traffic, for tests
};

}  // namespace rill
