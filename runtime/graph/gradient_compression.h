// Gradient compression: float32 gradients quantized to int8 or int4 codes with
// one float scale per chunk of consecutive values, and error feedback.
//
// Per chunk (256 values unless said otherwise): scale = max|v| / L, with
// L = 127 (int8) or 7 (int4); code = nearest(v / scale), ties to even, so the
// same values give the same codes on every place and every run; the value
// read back is code * scale. The error of one value is at most scale / 2.
// Special chunks:
// - all zeros, or a largest magnitude below FLT_MIN (denormals): scale 0,
//   every code 0, read back as zeros (error feedback keeps what was dropped);
// - any Inf or NaN: scale NaN, read back as NaN, as a float32 merge of the
//   same values would be non-finite; the residual of such a chunk is reset to
//   zero so that the next steps recover.
// Finite extremes (±FLT_MAX) read back finite.
//
// Error feedback: what quantization dropped from a place's gradient is kept
// as that place's residual and added to its next gradient before quantizing,
// so the sum of what was sent tracks the sum of the true gradients.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rill/build_strategy.h"
#include "rill/selected_rows.h"

namespace rill {

inline constexpr int kCompressionChunk = 256;

// The largest code: 127 (int8), 7 (int4); 0 for kNone.
int CompressionLevels(GradientCompression kind);

// What a compressed vector of `count` floats occupies: its codes plus one
// float scale per chunk. kNone: count * 4.
int64_t CompressedBytes(GradientCompression kind, int64_t count, int chunk = kCompressionChunk);

// Codes and scales of `count` values.
struct QuantizedValues {
  GradientCompression kind = GradientCompression::kInt8;
  int64_t count = 0;
  int32_t chunk = kCompressionChunk;
  std::vector<float> scales;  // one per chunk; the last chunk may be short
  // int8: one signed byte per value; int4: two values per byte, the earlier
  // one in the low nibble (two's complement), an odd count's last high nibble 0.
  std::string codes;

  int64_t bytes() const {
    return static_cast<int64_t>(codes.size() + scales.size() * sizeof(float));
  }
};

// Quantizes values[0, count). `kind` must not be kNone.
QuantizedValues Quantize(const float* values, int64_t count, GradientCompression kind,
                         int chunk = kCompressionChunk);
// The values read back: out[0, q.count).
void Dequantize(const QuantizedValues& q, float* out);

// Error feedback in one pass, without materialising codes (the in-process
// merge): v = gradient + residual; out = the values Quantize(v) reads back;
// residual = v - out. `residual` may be null (no feedback); `out` may alias
// `gradient`. Gives the same `out` as Dequantize(Quantize(v)).
void QuantizeWithFeedback(const float* gradient, float* residual, float* out, int64_t count,
                          GradientCompression kind, int chunk = kCompressionChunk);

// The same for the network path: returns the codes of gradient + residual and
// updates the residual (null: none).
QuantizedValues QuantizeWithFeedback(const float* gradient, float* residual, int64_t count,
                                     GradientCompression kind, int chunk = kCompressionChunk);

// Selected rows (each row once: SelectedRows::Merged). `residual` is a
// [height, width] table of what earlier steps dropped, sized (zeros) here
// when it does not fit: each row's residual is added to its values, which are
// quantized; what was dropped replaces those rows of the table. Leaves
// gradient + residual in rows->value and returns its codes.
QuantizedValues QuantizeRowsWithFeedback(SelectedRows* rows, std::vector<float>* residual,
                                         GradientCompression kind);

}  // namespace rill
