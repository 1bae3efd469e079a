#include "runtime/gradient_compression.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "runtime/error.h"

namespace rill {
namespace {

// One chunk's scale. Codes are computed in double: levels / max overflows a
// float for max below ~3.7e-37.
struct ChunkScale {
  float scale = 0;  // 0: a zero chunk; NaN: a non-finite one
  double inverse = 0;
  float max = 0;
  bool finite = true;
};

ChunkScale ScaleOf(const float* v, int64_t n, int levels) {
  ChunkScale s;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(v[i]);
    if (!(a <= FLT_MAX)) {  // Inf or NaN
      s.finite = false;
      s.scale = std::numeric_limits<float>::quiet_NaN();
      return s;
    }
    s.max = std::max(s.max, a);
  }
  if (s.max < FLT_MIN) {
    s.max = 0;
    return s;
  }
  s.scale = s.max / static_cast<float>(levels);
  s.inverse = levels / static_cast<double>(s.max);
  return s;
}

int CodeOf(float v, const ChunkScale& s, int levels) {
  if (s.scale == 0 || !s.finite) return 0;
  const double c = std::nearbyint(static_cast<double>(v) * s.inverse);
  return static_cast<int>(std::clamp(c, -static_cast<double>(levels), static_cast<double>(levels)));
}

// code * scale; finite for a finite scale (127 * (FLT_MAX / 127) rounds up
// past FLT_MAX).
float ValueOf(int code, float scale) {
  const float x = static_cast<float>(code) * scale;
  return std::isinf(x) && std::isfinite(scale) ? std::copysign(FLT_MAX, x) : x;
}

// gradient + residual, kept finite when both are.
float WithResidual(float g, const float* residual, int64_t i) {
  if (residual == nullptr) return g;
  const float v = g + residual[i];
  return std::isinf(v) && std::isfinite(g) ? std::copysign(FLT_MAX, v) : v;
}

void CheckArguments(GradientCompression kind, int64_t count, int chunk) {
  RILL_CHECK(kind != GradientCompression::kNone, kInvalidArgument,
             "quantizing needs int8 or int4, not none");
  RILL_CHECK(count >= 0 && chunk >= 1, kInvalidArgument, "quantizing ", count,
             " values in chunks of ", chunk);
}

int8_t Nibble(const std::string& codes, int64_t i) {
  const auto byte = static_cast<uint8_t>(codes[static_cast<size_t>(i / 2)]);
  const int n = i % 2 == 0 ? byte & 0xF : byte >> 4;
  return static_cast<int8_t>(n >= 8 ? n - 16 : n);
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
  std::vector<float> v(static_cast<size_t>(std::min<int64_t>(chunk, count)));
  for (int64_t begin = 0; begin < count; begin += chunk) {
    const int64_t n = std::min<int64_t>(chunk, count - begin);
    for (int64_t i = 0; i < n; ++i) v[i] = WithResidual(gradient[begin + i], residual, begin + i);
    const ChunkScale s = ScaleOf(v.data(), n, levels);
    q.scales.push_back(s.scale);
    for (int64_t i = 0; i < n; ++i) {
      const int code = CodeOf(v[i], s, levels);
      const int64_t at = begin + i;
      if (int4) {
        const auto nibble = static_cast<uint8_t>(code & 0xF);
        auto& byte = reinterpret_cast<uint8_t&>(q.codes[static_cast<size_t>(at / 2)]);
        byte = static_cast<uint8_t>(byte | (at % 2 == 0 ? nibble : nibble << 4));
      } else {
        q.codes[static_cast<size_t>(at)] = static_cast<char>(static_cast<int8_t>(code));
      }
      if (residual != nullptr) residual[at] = s.finite ? v[i] - ValueOf(code, s.scale) : 0;
    }
  }
  return q;
}

QuantizedValues Quantize(const float* values, int64_t count, GradientCompression kind, int chunk) {
  return QuantizeWithFeedback(values, nullptr, count, kind, chunk);
}

void Dequantize(const QuantizedValues& q, float* out) {
  const bool int4 = q.kind == GradientCompression::kInt4;
  for (int64_t begin = 0, c = 0; begin < q.count; begin += q.chunk, ++c) {
    const int64_t n = std::min<int64_t>(q.chunk, q.count - begin);
    const float scale = q.scales[static_cast<size_t>(c)];
    for (int64_t i = begin; i < begin + n; ++i) {
      const int code =
          int4 ? Nibble(q.codes, i) : static_cast<int8_t>(q.codes[static_cast<size_t>(i)]);
      out[i] = std::isnan(scale) ? scale : ValueOf(code, scale);
    }
  }
}

void QuantizeWithFeedback(const float* gradient, float* residual, float* out, int64_t count,
                          GradientCompression kind, int chunk) {
  CheckArguments(kind, count, chunk);
  const int levels = CompressionLevels(kind);
  float v[kCompressionChunk];
  std::vector<float> big(chunk > kCompressionChunk ? static_cast<size_t>(chunk) : 0);
  float* values = big.empty() ? v : big.data();
  for (int64_t begin = 0; begin < count; begin += chunk) {
    const int64_t n = std::min<int64_t>(chunk, count - begin);
    for (int64_t i = 0; i < n; ++i) {
      values[i] = WithResidual(gradient[begin + i], residual, begin + i);
    }
    const ChunkScale s = ScaleOf(values, n, levels);
    for (int64_t i = 0; i < n; ++i) {
      const float back = s.finite ? ValueOf(CodeOf(values[i], s, levels), s.scale) : s.scale;
      if (residual != nullptr) residual[begin + i] = s.finite ? values[i] - back : 0;
      out[begin + i] = back;
    }
  }
}

}  // namespace rill
