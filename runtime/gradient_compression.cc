#include "runtime/gradient_compression.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "runtime/error.h"

namespace rill {
namespace {

// One chunk's scale. `inverse` is levels / max, which overflows a float for
// max below ~3.7e-37: such chunks are rounded in double.
struct ChunkScale {
  float scale = 0;  // 0: a zero chunk; NaN: a non-finite one
  double inverse = 0;
  float max = 0;
  bool finite = true;
};

ChunkScale ScaleOf(const float* v, int64_t n, int levels) {
  ChunkScale s;
  bool bad = false;
  float max = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(v[i]);
    bad |= !(a <= FLT_MAX);  // Inf or NaN
    max = a > max ? a : max;
  }
  if (bad) {
    s.finite = false;
    s.scale = std::numeric_limits<float>::quiet_NaN();
    return s;
  }
  if (max < FLT_MIN) return s;
  s.max = max;
  s.scale = max / static_cast<float>(levels);
  s.inverse = levels / static_cast<double>(max);
  return s;
}

// 1.5 * 2^23: adding and subtracting it rounds a float of magnitude below
// 2^22 to the nearest whole number, ties to even (std::nearbyint is a
// library call without SSE4.1).
constexpr float kRoundingMagic = 12582912.0f;

// The chunk's codes (whole numbers in [-levels, levels], as floats) and the
// values they read back. A non-finite chunk: codes 0, values NaN.
void RoundChunk(const float* v, int64_t n, const ChunkScale& s, int levels, float* codes,
                float* back) {
  if (!s.finite || s.scale == 0) {
    std::fill(codes, codes + n, 0.0f);
    std::fill(back, back + n, s.scale);
    return;
  }
  const auto limit = static_cast<float>(levels);
  const auto inverse = static_cast<float>(s.inverse);
  if (std::isfinite(inverse)) {
    for (int64_t i = 0; i < n; ++i) {
      const float c = (v[i] * inverse + kRoundingMagic) - kRoundingMagic;
      codes[i] = std::min(limit, std::max(-limit, c));
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      codes[i] =
          static_cast<float>(std::clamp(std::nearbyint(v[i] * s.inverse),
                                        -static_cast<double>(levels), static_cast<double>(levels)));
    }
  }
  for (int64_t i = 0; i < n; ++i) back[i] = codes[i] * s.scale;
  if (s.max > FLT_MAX / 2) {  // levels * (max / levels) can round up past FLT_MAX
    for (int64_t i = 0; i < n; ++i) {
      if (std::isinf(back[i])) back[i] = std::copysign(FLT_MAX, back[i]);
    }
  }
}

// values[0, n) = gradient + residual, kept finite where the gradient is.
void AddResidual(const float* gradient, const float* residual, int64_t n, float* values) {
  if (residual == nullptr) {
    std::copy(gradient, gradient + n, values);
    return;
  }
  bool overflow = false;
  for (int64_t i = 0; i < n; ++i) {
    values[i] = gradient[i] + residual[i];
    overflow |= std::isinf(values[i]);
  }
  if (!overflow) return;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isinf(values[i]) && std::isfinite(gradient[i])) {
      values[i] = std::copysign(FLT_MAX, values[i]);
    }
  }
}

// One chunk of either path: values, their codes and what those read back;
// updates the residual. Returns the chunk's scale.
float QuantizeChunk(const float* gradient, float* residual, int64_t n, int levels, float* values,
                    float* codes, float* back) {
  AddResidual(gradient, residual, n, values);
  const ChunkScale s = ScaleOf(values, n, levels);
  RoundChunk(values, n, s, levels, codes, back);
  if (residual != nullptr) {
    if (s.finite) {
      for (int64_t i = 0; i < n; ++i) residual[i] = values[i] - back[i];
    } else {
      std::fill(residual, residual + n, 0.0f);
    }
  }
  return s.scale;
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
  const auto width = static_cast<size_t>(std::min<int64_t>(chunk, count));
  std::vector<float> values(width), codes(width), back(width);
  for (int64_t begin = 0; begin < count; begin += chunk) {
    const int64_t n = std::min<int64_t>(chunk, count - begin);
    q.scales.push_back(QuantizeChunk(gradient + begin, residual ? residual + begin : nullptr, n,
                                     levels, values.data(), codes.data(), back.data()));
    for (int64_t i = 0; i < n; ++i) {
      const int code = static_cast<int>(codes[static_cast<size_t>(i)]);
      const int64_t at = begin + i;
      if (int4) {
        const auto nibble = static_cast<uint8_t>(code & 0xF);
        auto& byte = reinterpret_cast<uint8_t&>(q.codes[static_cast<size_t>(at / 2)]);
        byte = static_cast<uint8_t>(byte | (at % 2 == 0 ? nibble : nibble << 4));
      } else {
        q.codes[static_cast<size_t>(at)] = static_cast<char>(static_cast<int8_t>(code));
      }
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
      const float x = static_cast<float>(code) * scale;
      // As RoundChunk: finite for a finite scale.
      out[i] = std::isinf(x) && std::isfinite(scale) ? std::copysign(FLT_MAX, x) : x;
    }
  }
}

void QuantizeWithFeedback(const float* gradient, float* residual, float* out, int64_t count,
                          GradientCompression kind, int chunk) {
  CheckArguments(kind, count, chunk);
  const int levels = CompressionLevels(kind);
  const auto width = static_cast<size_t>(std::min<int64_t>(chunk, count));
  float small[2][kCompressionChunk];
  std::vector<float> big(width > kCompressionChunk ? 2 * width : 0);
  float* values = big.empty() ? small[0] : big.data();
  float* codes = big.empty() ? small[1] : big.data() + width;
  for (int64_t begin = 0; begin < count; begin += chunk) {
    const int64_t n = std::min<int64_t>(chunk, count - begin);
    // `out` may alias `gradient`: the chunk is read into `values` first.
    QuantizeChunk(gradient + begin, residual ? residual + begin : nullptr, n, levels, values, codes,
                  out + begin);
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
