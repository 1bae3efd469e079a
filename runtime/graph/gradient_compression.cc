#include "runtime/graph/gradient_compression.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

#include "rill/error.h"

namespace rill {
namespace {

// The bits of |x|: for non-negative floats, integer order is float order, and
// Inf and NaN are the largest (0x7F800000 and above). An integer maximum of
// them is one vectorised pass that finds the chunk's largest magnitude and
// whether it holds a value that is not finite.
constexpr uint32_t kInfinityBits = 0x7F800000;

uint32_t MagnitudeBits(float x) { return std::bit_cast<uint32_t>(x) & 0x7FFFFFFF; }

// values = gradient (+ residual); returns the largest MagnitudeBits.
uint32_t AddResidual(const float* gradient, const float* residual, int64_t n, float* values) {
  uint32_t max = 0;
  if (residual == nullptr) {
    for (int64_t i = 0; i < n; ++i) {
      values[i] = gradient[i];
      const uint32_t m = MagnitudeBits(values[i]);
      max = m > max ? m : max;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      values[i] = gradient[i] + residual[i];
      const uint32_t m = MagnitudeBits(values[i]);
      max = m > max ? m : max;
    }
  }
  return max;
}

// After AddResidual found a value that is not finite: where the gradient is
// finite, gradient + residual overflowed and is clamped to ±FLT_MAX. Returns
// false when the gradient itself holds Inf or NaN.
bool ClampOverflow(const float* gradient, int64_t n, float* values, uint32_t* max) {
  *max = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(gradient[i])) return false;
    if (std::isinf(values[i])) values[i] = std::copysign(FLT_MAX, values[i]);
    *max = std::max(*max, MagnitudeBits(values[i]));
  }
  return true;
}

// 1.5 * 2^23: adding and subtracting it rounds a float of magnitude below
// 2^22 to the nearest whole number, ties to even (std::nearbyint is a
// library call without SSE4.1, and this loop must vectorise).
constexpr float kRoundingMagic = 12582912.0f;

// One chunk of either path. values: scratch of n floats. Writes what the
// codes read back to `back` (which may alias `gradient`), the codes to
// `codes` (may be null) and the residual (may be null). Returns the scale:
// 0 for a zero chunk, NaN for one that is not finite.
float QuantizeChunk(const float* gradient, float* residual, int64_t n, int levels, float* values,
                    int8_t* codes, float* back) {
  uint32_t max_bits = AddResidual(gradient, residual, n, values);
  if (max_bits >= kInfinityBits && !ClampOverflow(gradient, n, values, &max_bits)) {
    if (codes != nullptr) std::fill(codes, codes + n, int8_t{0});
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::fill(back, back + n, nan);
    if (residual != nullptr) std::fill(residual, residual + n, 0.0f);  // the next step recovers
    return nan;
  }
  const float max = std::bit_cast<float>(max_bits);
  if (max < FLT_MIN) {  // zeros and denormals: dropped now, kept in the residual
    if (codes != nullptr) std::fill(codes, codes + n, int8_t{0});
    if (residual != nullptr) std::copy(values, values + n, residual);
    std::fill(back, back + n, 0.0f);
    return 0.0f;
  }
  const auto limit = static_cast<float>(levels);
  const float scale = max / limit;
  const double inverse_double = levels / static_cast<double>(max);
  const auto inverse = static_cast<float>(inverse_double);
  if (std::isfinite(inverse)) {
    for (int64_t i = 0; i < n; ++i) {
      float c = (values[i] * inverse + kRoundingMagic) - kRoundingMagic;
      c = std::min(limit, std::max(-limit, c));
      back[i] = c * scale;
      if (codes != nullptr) codes[i] = static_cast<int8_t>(c);
    }
  } else {  // max below ~3.7e-37: levels / max overflows a float
    for (int64_t i = 0; i < n; ++i) {
      const double c = std::clamp(std::nearbyint(values[i] * inverse_double),
                                  -static_cast<double>(levels), static_cast<double>(levels));
      back[i] = static_cast<float>(c) * scale;
      if (codes != nullptr) codes[i] = static_cast<int8_t>(c);
    }
  }
  if (max > FLT_MAX / 2) {  // levels * (max / levels) can round up past FLT_MAX
    for (int64_t i = 0; i < n; ++i) {
      if (std::isinf(back[i])) back[i] = std::copysign(FLT_MAX, back[i]);
    }
  }
  if (residual != nullptr) {
    for (int64_t i = 0; i < n; ++i) residual[i] = values[i] - back[i];
  }
  return scale;
}

// Scratch for one chunk: on the stack for the default chunk.
class ChunkScratch {
 public:
  explicit ChunkScratch(int64_t width) {
    if (width > kCompressionChunk) {
      big_values_.resize(static_cast<size_t>(width));
      big_codes_.resize(static_cast<size_t>(width));
      big_back_.resize(static_cast<size_t>(width));
    }
  }
  float* values() { return big_values_.empty() ? values_ : big_values_.data(); }
  int8_t* codes() { return big_codes_.empty() ? codes_ : big_codes_.data(); }
  float* back() { return big_back_.empty() ? back_ : big_back_.data(); }

 private:
  float values_[kCompressionChunk];
  int8_t codes_[kCompressionChunk];
  float back_[kCompressionChunk];
  std::vector<float> big_values_;
  std::vector<int8_t> big_codes_;
  std::vector<float> big_back_;
};

void CheckArguments(GradientCompression kind, int64_t count, int chunk) {
  RILL_CHECK(kind != GradientCompression::kNone, kInvalidArgument,
             "quantizing needs int8 or int4, not none");
  RILL_CHECK(count >= 0 && chunk >= 1, kInvalidArgument, "quantizing ", count,
             " values in chunks of ", chunk);
}

// code * scale for a chunk's codes; finite for a finite scale, as QuantizeChunk.
void ReadBack(const int8_t* codes, int64_t n, float scale, int levels, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(codes[i]) * scale;
  if (std::isfinite(scale) && scale > FLT_MAX / static_cast<float>(levels) / 2) {
    for (int64_t i = 0; i < n; ++i) {
      if (std::isinf(out[i])) out[i] = std::copysign(FLT_MAX, out[i]);
    }
  }
}

}  // namespace

const char* GradientCompressionName(GradientCompression kind) {
  switch (kind) {
    case GradientCompression::kNone: return "none";
    case GradientCompression::kInt8: return "int8";
    case GradientCompression::kInt4: return "int4";
  }
  return "?";
}

GradientCompression ParseGradientCompression(const std::string& text) {
  for (GradientCompression kind :
       {GradientCompression::kNone, GradientCompression::kInt8, GradientCompression::kInt4}) {
    if (text == GradientCompressionName(kind)) return kind;
  }
  throw Error(ErrorCode::kInvalidArgument,
              StrCat("gradient compression \"", text, "\": expected none, int8 or int4"));
}

int CompressionLevels(GradientCompression kind) {
  switch (kind) {
    case GradientCompression::kNone: return 0;
    case GradientCompression::kInt8: return 127;
    case GradientCompression::kInt4: return 7;
  }
  return 0;
}

int64_t CompressedBytes(GradientCompression kind, int64_t count, int chunk) {
  if (kind == GradientCompression::kNone) return count * 4;
  const int64_t chunks = (count + chunk - 1) / chunk;
  const int64_t codes = kind == GradientCompression::kInt8 ? count : (count + 1) / 2;
  return codes + chunks * 4;
}

QuantizedValues QuantizeWithFeedback(const float* gradient, float* residual, int64_t count,
                                     GradientCompression kind, int chunk) {
  CheckArguments(kind, count, chunk);
  const int levels = CompressionLevels(kind);
  const bool int4 = kind == GradientCompression::kInt4;
  QuantizedValues q;
  q.kind = kind;
  q.count = count;
  q.chunk = chunk;
  q.scales.reserve(static_cast<size_t>((count + chunk - 1) / chunk));
  q.codes.assign(static_cast<size_t>(int4 ? (count + 1) / 2 : count), '\0');
  ChunkScratch scratch(std::min<int64_t>(chunk, count));
  auto* packed = reinterpret_cast<uint8_t*>(q.codes.data());
  for (int64_t begin = 0; begin < count; begin += chunk) {
    const int64_t n = std::min<int64_t>(chunk, count - begin);
    int8_t* codes = int4 ? scratch.codes() : reinterpret_cast<int8_t*>(packed + begin);
    q.scales.push_back(QuantizeChunk(gradient + begin, residual ? residual + begin : nullptr, n,
                                     levels, scratch.values(), codes, scratch.back()));
    if (!int4) continue;
    // Two codes a byte, the earlier in the low nibble; a chunk starts on an
    // odd value only when the chunk size is odd.
    int64_t i = 0;
    if (begin % 2 == 0) {
      uint8_t* bytes = packed + begin / 2;
      for (; i + 1 < n; i += 2) {
        bytes[i / 2] = static_cast<uint8_t>((codes[i] & 0xF) | ((codes[i + 1] & 0xF) << 4));
      }
    }
    for (; i < n; ++i) {
      const int64_t at = begin + i;
      const auto nibble = static_cast<uint8_t>(codes[i] & 0xF);
      packed[at / 2] = static_cast<uint8_t>(packed[at / 2] | (at % 2 == 0 ? nibble : nibble << 4));
    }
  }
  return q;
}

QuantizedValues Quantize(const float* values, int64_t count, GradientCompression kind, int chunk) {
  return QuantizeWithFeedback(values, nullptr, count, kind, chunk);
}

void Dequantize(const QuantizedValues& q, float* out) {
  const int levels = CompressionLevels(q.kind);
  const auto* packed = reinterpret_cast<const uint8_t*>(q.codes.data());
  int8_t codes[kCompressionChunk];
  std::vector<int8_t> big(q.chunk > kCompressionChunk ? static_cast<size_t>(q.chunk) : 0);
  int8_t* unpacked = big.empty() ? codes : big.data();
  for (int64_t begin = 0, c = 0; begin < q.count; begin += q.chunk, ++c) {
    const int64_t n = std::min<int64_t>(q.chunk, q.count - begin);
    const int8_t* chunk_codes = reinterpret_cast<const int8_t*>(packed + begin);
    if (q.kind == GradientCompression::kInt4) {
      // Sign-extending shifts: a low nibble is moved up first.
      int64_t i = 0;
      if (begin % 2 == 0) {
        const uint8_t* bytes = packed + begin / 2;
        for (; i + 1 < n; i += 2) {
          const auto byte = static_cast<int8_t>(bytes[i / 2]);
          unpacked[i] = static_cast<int8_t>(static_cast<int8_t>(bytes[i / 2] << 4) >> 4);
          unpacked[i + 1] = static_cast<int8_t>(byte >> 4);
        }
      }
      for (; i < n; ++i) {
        const int64_t at = begin + i;
        const auto byte = static_cast<int8_t>(packed[at / 2]);
        unpacked[i] = static_cast<int8_t>(
            at % 2 == 0 ? static_cast<int8_t>(static_cast<uint8_t>(byte) << 4) >> 4 : byte >> 4);
      }
      chunk_codes = unpacked;
    }
    ReadBack(chunk_codes, n, q.scales[static_cast<size_t>(c)], levels, out + begin);
  }
}

void QuantizeWithFeedback(const float* gradient, float* residual, float* out, int64_t count,
                          GradientCompression kind, int chunk) {
  CheckArguments(kind, count, chunk);
  const int levels = CompressionLevels(kind);
  ChunkScratch scratch(std::min<int64_t>(chunk, count));
  for (int64_t begin = 0; begin < count; begin += chunk) {
    const int64_t n = std::min<int64_t>(chunk, count - begin);
    QuantizeChunk(gradient + begin, residual ? residual + begin : nullptr, n, levels,
                  scratch.values(), nullptr, out + begin);
  }
}

QuantizedValues QuantizeRowsWithFeedback(SelectedRows* rows, std::vector<float>* residual,
                                         GradientCompression kind) {
  const int64_t count = rows->value.numel();
  const int64_t width = rows->rows.empty() ? 0 : count / rows->value.dim(0);
  const auto table = static_cast<size_t>(rows->height * width);
  if (residual->size() != table) residual->assign(table, 0.0f);
  float* values = rows->value.mutable_data<float>();
  for (size_t r = 0; r < rows->rows.size(); ++r) {
    const float* kept = residual->data() + rows->rows[r] * width;
    float* row = values + static_cast<int64_t>(r) * width;
    for (int64_t i = 0; i < width; ++i) row[i] += kept[i];
  }
  std::vector<float> dropped(static_cast<size_t>(count), 0.0f);
  QuantizedValues q = QuantizeWithFeedback(values, dropped.data(), count, kind);
  for (size_t r = 0; r < rows->rows.size(); ++r) {
    std::copy_n(dropped.data() + static_cast<int64_t>(r) * width, width,
                residual->data() + rows->rows[r] * width);
  }
  return q;
}

}  // namespace rill
