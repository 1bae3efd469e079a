// Quantization of gradients: error bounds per chunk, error feedback over many
// steps, special chunks, and the fused path against codes read back.
#include "runtime/graph/gradient_compression.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

#include "rill/error.h"

namespace rill {
namespace {

constexpr GradientCompression kKinds[] = {GradientCompression::kInt8, GradientCompression::kInt4};

std::vector<float> Normal(int64_t n, uint64_t seed, float sigma = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<float> RoundTrip(const std::vector<float>& v, GradientCompression kind, int chunk) {
  const QuantizedValues q = Quantize(v.data(), static_cast<int64_t>(v.size()), kind, chunk);
  std::vector<float> back(v.size());
  Dequantize(q, back.data());
  return back;
}

TEST(GradientCompressionTest, EachValueIsWithinHalfAStepOfItsChunk) {
  for (GradientCompression kind : kKinds) {
    const int levels = CompressionLevels(kind);
    // 1000 values: three full chunks and a short one; chunks of very
    // different magnitudes, so one scale per chunk matters.
    std::vector<float> v = Normal(1000, 7);
    for (size_t i = 256; i < 512; ++i) v[i] *= 1e-4f;
    for (size_t i = 512; i < 768; ++i) v[i] *= 1e3f;
    const std::vector<float> back = RoundTrip(v, kind, 256);
    for (size_t begin = 0; begin < v.size(); begin += 256) {
      const size_t end = std::min(v.size(), begin + 256);
      float max = 0;
      for (size_t i = begin; i < end; ++i) max = std::max(max, std::fabs(v[i]));
      const float step = max / static_cast<float>(levels);
      for (size_t i = begin; i < end; ++i) {
        ASSERT_LE(std::fabs(back[i] - v[i]), step * 0.5f * (1 + 1e-5f))
            << GradientCompressionName(kind) << " value " << i << ": " << v[i] << " read back as "
            << back[i];
      }
    }
  }
}

TEST(GradientCompressionTest, RelativeErrorOfANormalGradient) {
  // The norm of the error against the norm of the values: the figure that
  // decides whether training notices. Max-scaled chunks of 256 normal values
  // have max ~2.8 sigma, so the error is ~max / (L * sqrt(12)) per value.
  const std::vector<float> v = Normal(1 << 16, 11);
  for (GradientCompression kind : kKinds) {
    const std::vector<float> back = RoundTrip(v, kind, kCompressionChunk);
    double err = 0, norm = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      err += (back[i] - v[i]) * (back[i] - v[i]);
      norm += v[i] * v[i];
    }
    const double relative = std::sqrt(err / norm);
    EXPECT_LT(relative, kind == GradientCompression::kInt8 ? 0.01 : 0.15)
        << GradientCompressionName(kind);
    EXPECT_GT(relative, kind == GradientCompression::kInt8 ? 0.001 : 0.02)
        << GradientCompressionName(kind) << ": too good to be quantized";
  }
}

TEST(GradientCompressionTest, CodesUseTheWholeRangeAndPackInt4TwoPerByte) {
  const std::vector<float> v = {-7, -3.4f, 0, 1.6f, 7, 2.5f, 3.5f};  // one chunk, max 7, scale 1
  const QuantizedValues q = Quantize(v.data(), 7, GradientCompression::kInt4);
  ASSERT_EQ(q.scales.size(), 1u);
  EXPECT_FLOAT_EQ(q.scales[0], 1.0f);
  ASSERT_EQ(q.codes.size(), 4u);  // (7 + 1) / 2
  EXPECT_EQ(q.bytes(), 4 + 4);
  EXPECT_EQ(CompressedBytes(GradientCompression::kInt4, 7), 8);
  std::vector<float> back(7);
  Dequantize(q, back.data());
  // Nearest, ties to even: 2.5 -> 2, 3.5 -> 4.
  EXPECT_EQ(back, (std::vector<float>{-7, -3, 0, 2, 7, 2, 4}));
  EXPECT_EQ(static_cast<uint8_t>(q.codes[0]), 0xD9);  // -3 high, -7 low
  EXPECT_EQ(static_cast<uint8_t>(q.codes[3]), 0x04);  // an odd count's last high nibble is 0

  const QuantizedValues q8 = Quantize(v.data(), 7, GradientCompression::kInt8);
  EXPECT_EQ(q8.codes.size(), 7u);
  EXPECT_EQ(static_cast<int8_t>(q8.codes[0]), -127);
  EXPECT_EQ(static_cast<int8_t>(q8.codes[4]), 127);
  EXPECT_EQ(CompressedBytes(GradientCompression::kInt8, 1000), 1000 + 4 * 4);
  EXPECT_EQ(CompressedBytes(GradientCompression::kNone, 1000), 4000);
}

TEST(GradientCompressionTest, ZeroAndTinyChunksReadBackAsZerosWithoutDividing) {
  for (GradientCompression kind : kKinds) {
    std::vector<float> v(600, 0.0f);
    for (size_t i = 256; i < 512; ++i) v[i] = (i % 2 ? 1 : -1) * 1e-40f;  // denormals
    v[599] = -0.0f;
    const QuantizedValues q = Quantize(v.data(), 600, kind);
    for (float scale : q.scales) EXPECT_EQ(scale, 0.0f);
    std::vector<float> back(600, 1.0f);
    Dequantize(q, back.data());
    for (float x : back) ASSERT_EQ(x, 0.0f);
    // With feedback the denormals are not lost: they wait in the residual.
    std::vector<float> residual(600, 0.0f), out(600);
    QuantizeWithFeedback(v.data(), residual.data(), out.data(), 600, kind);
    for (size_t i = 0; i < 600; ++i) {
      ASSERT_FALSE(std::isnan(out[i]));
      ASSERT_EQ(residual[i], v[i]);
    }
  }
}

TEST(GradientCompressionTest, ExtremeFiniteValuesStayFinite) {
  for (GradientCompression kind : kKinds) {
    std::vector<float> v = {FLT_MAX, -FLT_MAX, FLT_MAX / 3, 1.0f, -FLT_MAX, 0.0f};
    const std::vector<float> back = RoundTrip(v, kind, kCompressionChunk);
    for (size_t i = 0; i < v.size(); ++i) {
      ASSERT_TRUE(std::isfinite(back[i])) << i << ": " << back[i];
      EXPECT_LE(std::fabs(back[i] - v[i]), FLT_MAX / CompressionLevels(kind));
    }
    EXPECT_EQ(back[0], FLT_MAX);
    EXPECT_EQ(back[1], -FLT_MAX);
    // Feedback on top of FLT_MAX: gradient + residual is clamped, not Inf.
    std::vector<float> residual(v.size(), 0.0f), out(v.size());
    for (int step = 0; step < 5; ++step) {
      QuantizeWithFeedback(v.data(), residual.data(), out.data(), 6, kind);
      for (size_t i = 0; i < v.size(); ++i) {
        ASSERT_TRUE(std::isfinite(out[i]) && std::isfinite(residual[i])) << step << " " << i;
      }
    }
    // A chunk next to a 1e30 chunk is not affected by it.
    std::vector<float> mixed(512, 1e30f);
    for (size_t i = 256; i < 512; ++i) mixed[i] = 1e-30f * static_cast<float>(i);
    const std::vector<float> mixed_back = RoundTrip(mixed, kind, 256);
    for (size_t i = 256; i < 512; ++i) {
      ASSERT_NEAR(mixed_back[i], mixed[i], 512e-30 / CompressionLevels(kind));
    }
  }
}

TEST(GradientCompressionTest, ANonFiniteChunkReadsBackNaNAndItsResidualRecovers) {
  for (GradientCompression kind : kKinds) {
    std::vector<float> v = Normal(512, 5);
    v[10] = INFINITY;
    std::vector<float> residual(512, 0.25f), out(512);
    QuantizeWithFeedback(v.data(), residual.data(), out.data(), 512, kind);
    for (size_t i = 0; i < 256; ++i) {
      ASSERT_TRUE(std::isnan(out[i]));
      ASSERT_EQ(residual[i], 0.0f);  // the next step starts clean
    }
    for (size_t i = 256; i < 512; ++i) ASSERT_TRUE(std::isfinite(out[i]));
    const QuantizedValues q = Quantize(v.data(), 512, kind);
    EXPECT_TRUE(std::isnan(q.scales[0]));
    EXPECT_TRUE(std::isfinite(q.scales[1]));
  }
}

TEST(GradientCompressionTest, FusedFeedbackReadsBackWhatTheCodesSay) {
  for (GradientCompression kind : kKinds) {
    for (int chunk : {1, 7, 256, 1000}) {
      const std::vector<float> g = Normal(2049, 3);
      std::vector<float> r1 = Normal(2049, 4, 0.01f), r2 = r1, out(2049);
      QuantizeWithFeedback(g.data(), r1.data(), out.data(), 2049, kind, chunk);
      const QuantizedValues q = QuantizeWithFeedback(g.data(), r2.data(), 2049, kind, chunk);
      std::vector<float> back(2049);
      Dequantize(q, back.data());
      ASSERT_EQ(out, back) << GradientCompressionName(kind) << " chunk " << chunk;
      ASSERT_EQ(r1, r2);
    }
  }
}

// The check: over 1,000 random steps the running sum of what was sent
// tracks the running sum of the true gradients. With feedback the difference
// is exactly the last residual (at most half a step per value); without it,
// the rounding errors add up.
TEST(GradientCompressionTest, ErrorFeedbackKeepsTheRunningSumsTogether) {
  for (GradientCompression kind : kKinds) {
    constexpr int64_t kN = 1024;
    std::mt19937_64 rng(42);
    std::normal_distribution<float> noise(0.0f, 1.0f);
    std::vector<double> true_sum(kN, 0), fed_sum(kN, 0), plain_sum(kN, 0);
    std::vector<float> residual(kN, 0.0f), sent(kN), plain(kN), g(kN);
    double fed_drift = 0, plain_drift = 0, step_bound = 0;
    for (int step = 0; step < 1000; ++step) {
      // A gradient with a steady small component under noise: the part
      // quantization rounds away every single step.
      for (int64_t i = 0; i < kN; ++i) g[i] = 0.004f * (i % 7) + noise(rng);
      QuantizeWithFeedback(g.data(), residual.data(), sent.data(), kN, kind);
      QuantizeWithFeedback(g.data(), nullptr, plain.data(), kN, kind);
      for (int64_t i = 0; i < kN; ++i) {
        true_sum[i] += g[i];
        fed_sum[i] += sent[i];
        plain_sum[i] += plain[i];
      }
      float max = 0;
      for (float x : g) max = std::max(max, std::fabs(x));
      step_bound = std::max(step_bound, 2.0 * max / CompressionLevels(kind));
    }
    for (int64_t i = 0; i < kN; ++i) {
      const double fed = std::fabs(fed_sum[i] - true_sum[i]);
      fed_drift = std::max(fed_drift, fed);
      plain_drift = std::max(plain_drift, std::fabs(plain_sum[i] - true_sum[i]));
      // Bounded by one step's rounding (plus float summation), not by 1,000.
      ASSERT_NEAR(fed_sum[i] + residual[i], true_sum[i], 1e-3 * (1 + std::fabs(true_sum[i])));
    }
    EXPECT_LT(fed_drift, step_bound) << GradientCompressionName(kind);
    EXPECT_GT(plain_drift, 3 * fed_drift)
        << GradientCompressionName(kind) << ": without feedback the errors accumulate";
  }
}

TEST(GradientCompressionTest, NamesParseAndBadOnesAreRefused) {
  EXPECT_EQ(ParseGradientCompression("int8"), GradientCompression::kInt8);
  EXPECT_EQ(ParseGradientCompression("int4"), GradientCompression::kInt4);
  EXPECT_EQ(ParseGradientCompression("none"), GradientCompression::kNone);
  try {
    ParseGradientCompression("int2");
    FAIL() << "int2 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"int2\": expected none, int8 or int4"),
              std::string::npos)
        << e.what();
  }
  const float x = 1;
  EXPECT_THROW(Quantize(&x, 1, GradientCompression::kNone), Error);
  EXPECT_THROW(Quantize(&x, 1, GradientCompression::kInt8, 0), Error);
}

}  // namespace
}  // namespace rill
