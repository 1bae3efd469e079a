// Tests of pool2d and pool2d_grad against direct pooling loops and central differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "rill/error.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
// Named after the file, not anonymous: the sanitizer builds compile test files
// together (unity builds), where helpers of the same name would collide.
namespace pool2d_op_test {

struct PoolCase {
  std::string name;
  std::string type;  // "max" or "avg"
  Shape x;
  std::vector<int64_t> ksize;
  std::vector<int64_t> strides{1, 1};
  std::vector<int64_t> paddings{0, 0};
  bool global = false;
  bool exclusive = true;
};

AttrSetter PoolAttrs(const PoolCase& c) {
  return [c](proto::OpDesc* op) {
    SetAttr(op, "pooling_type", c.type);
    SetAttr(op, "ksize", c.ksize);
    SetAttr(op, "strides", c.strides);
    SetAttr(op, "paddings", c.paddings);
    SetAttr(op, "global_pooling", c.global);
    SetAttr(op, "exclusive", c.exclusive);
  };
}

// The window sweep of a case, global pooling resolved.
struct Sweep {
  int64_t planes, h, w, kh, kw, sh, sw, ph, pw, oh, ow;
};

Sweep SweepOf(const PoolCase& c) {
  Sweep s;
  s.planes = c.x[0] * c.x[1];
  s.h = c.x[2];
  s.w = c.x[3];
  s.kh = c.global ? s.h : c.ksize[0];
  s.kw = c.global ? s.w : c.ksize[1];
  s.sh = c.global ? 1 : c.strides[0];
  s.sw = c.global ? 1 : c.strides[1];
  s.ph = c.global ? 0 : c.paddings[0];
  s.pw = c.global ? 0 : c.paddings[1];
  s.oh = (s.h + 2 * s.ph - s.kh) / s.sh + 1;
  s.ow = (s.w + 2 * s.pw - s.kw) / s.sw + 1;
  return s;
}

// Calls fn(output index, input indices of the window's real cells in row-major order).
template <class Fn>
void ForEachWindow(const PoolCase& c, Fn fn) {
  const Sweep s = SweepOf(c);
  for (int64_t p = 0; p < s.planes; ++p) {
    for (int64_t oy = 0; oy < s.oh; ++oy) {
      for (int64_t ox = 0; ox < s.ow; ++ox) {
        std::vector<int64_t> cells;
        for (int64_t i = 0; i < s.kh; ++i) {
          for (int64_t j = 0; j < s.kw; ++j) {
            const int64_t y = oy * s.sh - s.ph + i;
            const int64_t x = ox * s.sw - s.pw + j;
            if (y >= 0 && y < s.h && x >= 0 && x < s.w) cells.push_back((p * s.h + y) * s.w + x);
          }
        }
        fn((p * s.oh + oy) * s.ow + ox, cells);
      }
    }
  }
}

// Divisor of an average over `cells` real cells.
double AvgDivisor(const PoolCase& c, size_t cells) {
  const Sweep s = SweepOf(c);
  return c.exclusive ? static_cast<double>(cells) : static_cast<double>(s.kh * s.kw);
}

std::vector<double> DirectPool(const PoolCase& c, const std::vector<double>& x) {
  const Sweep s = SweepOf(c);
  std::vector<double> out(static_cast<size_t>(s.planes * s.oh * s.ow));
  ForEachWindow(c, [&](int64_t o, const std::vector<int64_t>& cells) {
    double best = -std::numeric_limits<double>::infinity();
    double sum = 0;
    for (int64_t i : cells) {
      best = std::max(best, x[i]);
      sum += x[i];
    }
    out[o] = c.type == "max" ? best : sum / AvgDivisor(c, cells.size());
  });
  return out;
}

std::vector<double> DirectPoolGrad(const PoolCase& c, const std::vector<double>& x,
                                   const std::vector<double>& dy) {
  std::vector<double> dx(x.size(), 0.0);
  ForEachWindow(c, [&](int64_t o, const std::vector<int64_t>& cells) {
    if (c.type == "max") {
      int64_t arg = cells[0];
      for (int64_t i : cells) {
        if (x[i] > x[arg]) arg = i;
      }
      dx[arg] += dy[o];
    } else {
      for (int64_t i : cells) dx[i] += dy[o] / AvgDivisor(c, cells.size());
    }
  });
  return dx;
}

// Distinct values in [-1, 1) in shuffled order, at least 2 / numel apart: no ties for max.
Tensor DistinctTensor(const Shape& shape, uint64_t seed) {
  Tensor t(DataType::kFloat64, shape);
  const int64_t n = t.numel();
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[i] = -1.0 + 2.0 * static_cast<double>(i) / n;
  std::mt19937_64 gen(seed);
  std::shuffle(values.begin(), values.end(), gen);
  std::copy(values.begin(), values.end(), t.mutable_data<double>());
  return t;
}

void ExpectAllNear(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

std::vector<PoolCase> Cases() {
  std::vector<PoolCase> cases;
  for (std::string type : {"max", "avg"}) {
    cases.push_back({type + "_2x2_stride2", type, {2, 3, 6, 6}, {2, 2}, {2, 2}});
    cases.push_back({type + "_2x2_stride2_odd", type, {1, 2, 5, 7}, {2, 2}, {2, 2}});
    cases.push_back({type + "_3x3_pad1", type, {1, 2, 5, 5}, {3, 3}, {1, 1}, {1, 1}});
    cases.push_back({type + "_3x3_stride2_pad1", type, {2, 1, 6, 5}, {3, 3}, {2, 2}, {1, 1}});
    cases.push_back({type + "_3x2_nonsquare", type, {1, 2, 7, 6}, {3, 2}, {2, 1}, {1, 0}});
    cases.push_back({type + "_global", type, {2, 3, 4, 5}, {1, 1}, {1, 1}, {0, 0}, true});
    cases.push_back({type + "_whole_plane", type, {1, 2, 3, 4}, {3, 4}});
  }
  cases.push_back(
      {"avg_3x3_pad1_inclusive", "avg", {1, 2, 5, 5}, {3, 3}, {1, 1}, {1, 1}, false, false});
  cases.push_back({"avg_3x3_stride2_pad1_inclusive",
                   "avg",
                   {2, 1, 6, 5},
                   {3, 3},
                   {2, 2},
                   {1, 1},
                   false,
                   false});
  cases.push_back(
      {"avg_2x3_pad1_inclusive", "avg", {1, 1, 4, 5}, {2, 3}, {1, 2}, {1, 1}, false, false});
  return cases;
}

TEST(Pool2dOpTest, SmallExampleByHand) {
  const Tensor x = MakeTensor<double>({1, 1, 2, 4}, {1, 5, 2, 0, 3, 4, 8, 6});
  PoolCase max{"max", "max", {1, 1, 2, 4}, {2, 2}, {2, 2}};
  EXPECT_EQ(ToDoubles(RunOp({"pool2d", {{"X", {x}}}, {{"Out", 1}}, PoolAttrs(max)})["Out"][0]),
            (std::vector<double>{5, 8}));
  PoolCase avg = max;
  avg.type = "avg";
  EXPECT_EQ(ToDoubles(RunOp({"pool2d", {{"X", {x}}}, {{"Out", 1}}, PoolAttrs(avg)})["Out"][0]),
            (std::vector<double>{3.25, 4}));
  // Padded by one on each side, 2x2 stride 2: corners see one real cell, edges two.
  PoolCase padded{"avg", "avg", {1, 1, 2, 4}, {2, 2}, {2, 2}, {1, 1}, false, false};
  EXPECT_EQ(ToDoubles(RunOp({"pool2d", {{"X", {x}}}, {{"Out", 1}}, PoolAttrs(padded)})["Out"][0]),
            (std::vector<double>{0.25, 1.75, 0, 0.75, 3, 1.5}));
}

TEST(Pool2dOpTest, ForwardMatchesDirectPooling) {
  uint64_t seed = 1;
  for (const PoolCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    for (DataType dtype : {DataType::kFloat64, DataType::kFloat32}) {
      const Tensor x = RandomTensor(c.x, seed++, -1, 1, dtype);
      auto out = RunOp({"pool2d", {{"X", {x}}}, {{"Out", 1}}, PoolAttrs(c)});
      const Sweep s = SweepOf(c);
      const Tensor& y = out["Out"][0];
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_EQ(y.shape(), (Shape{c.x[0], c.x[1], s.oh, s.ow}));
      ExpectAllNear(ToDoubles(y), DirectPool(c, ToDoubles(x)),
                    dtype == DataType::kFloat64 ? 1e-12 : 1e-5);
    }
  }
}

TEST(Pool2dOpTest, GradientMatchesNumeric) {
  uint64_t seed = 100;
  for (const PoolCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    GradientCheck("pool2d")
        .Input("X", DistinctTensor(c.x, seed++))
        .Output("Out")
        .Attrs(PoolAttrs(c))
        .Run();
  }
}

std::vector<double> RunPoolGrad(const PoolCase& c, const Tensor& x, const Tensor& dy) {
  auto out =
      RunOp({"pool2d_grad", {{"X", {x}}, {"Out@GRAD", {dy}}}, {{"X@GRAD", 1}}, PoolAttrs(c)});
  return ToDoubles(out["X@GRAD"][0]);
}

TEST(Pool2dOpTest, GradientMatchesDirectLoops) {
  uint64_t seed = 300;
  for (const PoolCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    const Sweep s = SweepOf(c);
    const Tensor x = RandomTensor(c.x, seed++);
    const Tensor dy = RandomTensor({c.x[0], c.x[1], s.oh, s.ow}, seed++);
    ExpectAllNear(RunPoolGrad(c, x, dy), DirectPoolGrad(c, ToDoubles(x), ToDoubles(dy)), 1e-12);
  }
}

TEST(Pool2dOpTest, MaxGradientGoesToFirstMaximumOnTies) {
  // Overlapping 2x2 windows, stride 1, over a plane of equal values: each
  // window's gradient goes to its top-left cell.
  const PoolCase c{"ties", "max", {1, 1, 3, 3}, {2, 2}};
  const Tensor x = MakeTensor<double>({1, 1, 3, 3}, std::vector<double>(9, 2.0));
  const Tensor dy = MakeTensor<double>({1, 1, 2, 2}, {1, 10, 100, 1000});
  EXPECT_EQ(RunPoolGrad(c, x, dy), (std::vector<double>{1, 10, 0, 100, 1000, 0, 0, 0, 0}));
  // Two cells tie for the maximum in one window; the first in row-major order wins.
  const PoolCase one{"tie2", "max", {1, 1, 2, 2}, {2, 2}};
  const Tensor x2 = MakeTensor<double>({1, 1, 2, 2}, {0, 3, 3, 1});
  const Tensor dy2 = MakeTensor<double>({1, 1, 1, 1}, {7});
  EXPECT_EQ(RunPoolGrad(one, x2, dy2), (std::vector<double>{0, 7, 0, 0}));
}

// 2x2 windows at stride 2 without padding run a kernel of their own
// (ops/nn/pool2x2.h) that must keep the general kernel's rules bit for bit.
TEST(Pool2dOpTest, TwoByTwoHalvingKeepsTheGeneralRules) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Windows: a tie (first wins), NaN after a number (never wins), NaN first
  // (nothing is greater), a -0 gradient (added onto zero: +0); 9 columns, so
  // the last column is in no window.
  const PoolCase c{"halving", "max", {1, 1, 2, 9}, {2, 2}, {2, 2}};
  const Tensor x = MakeTensor<double>({1, 1, 2, 9}, {4, 1, 0, nan, nan, 9, 1, 2, 7,  //
                                                     4, 4, 3, 2, 5, 9, 2, 1, 7});
  auto out = RunOp({"pool2d", {{"X", {x}}}, {{"Out", 1}}, PoolAttrs(c)});
  const std::vector<double> y = ToDoubles(out["Out"][0]);
  ASSERT_EQ(y.size(), 4u);
  EXPECT_EQ(y[0], 4);
  EXPECT_EQ(y[1], 3);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], 2);
  const Tensor dy = MakeTensor<double>({1, 1, 1, 4}, {1, 2, 3, -0.0});
  const std::vector<double> dx = RunPoolGrad(c, x, dy);
  EXPECT_EQ(dx, (std::vector<double>{1, 0, 0, 0, 3, 0, 0, 0, 0,  //
                                     0, 0, 2, 0, 0, 0, 0, 0, 0}));
  EXPECT_FALSE(std::signbit(dx[7]));  // the -0 went to the window's cell (0, 1)
  // Average: the same sums as the general kernel, from zero in row-major order.
  PoolCase avg = c;
  avg.type = "avg";
  const Tensor finite = RandomTensor(c.x, 7);
  auto avg_out = RunOp({"pool2d", {{"X", {finite}}}, {{"Out", 1}}, PoolAttrs(avg)});
  const std::vector<double> v = ToDoubles(finite);
  const std::vector<double> got = ToDoubles(avg_out["Out"][0]);
  for (int ox = 0; ox < 4; ++ox) {
    double sum = 0;
    sum += v[2 * ox];
    sum += v[2 * ox + 1];
    sum += v[9 + 2 * ox];
    sum += v[9 + 2 * ox + 1];
    EXPECT_EQ(got[ox], sum / 4) << ox;
  }
}

TEST(Pool2dOpTest, MaxIgnoresPadding) {
  // All inputs negative: a padded zero must never win.
  const PoolCase c{"neg", "max", {1, 1, 2, 2}, {2, 2}, {1, 1}, {1, 1}};
  const Tensor x = MakeTensor<double>({1, 1, 2, 2}, {-4, -3, -2, -1});
  auto out = RunOp({"pool2d", {{"X", {x}}}, {{"Out", 1}}, PoolAttrs(c)});
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{-4, -3, -3, -2, -1, -1, -2, -1, -1}));
}

TEST(Pool2dOpTest, MissingOutputGradientGivesZeros) {
  const PoolCase c{"zero", "avg", {1, 2, 4, 4}, {2, 2}, {2, 2}};
  auto out = RunOp({"pool2d_grad", {{"X", {RandomTensor(c.x, 1)}}}, {{"X@GRAD", 1}}, PoolAttrs(c)});
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), std::vector<double>(32, 0.0));
}

void RunPool(const PoolCase& c) {
  RunOp({"pool2d", {{"X", {RandomTensor(c.x, 1)}}}, {{"Out", 1}}, PoolAttrs(c)});
}

TEST(Pool2dOpTest, RejectsBadShapesAndAttributes) {
  const PoolCase good{"good", "max", {1, 2, 4, 4}, {2, 2}, {2, 2}};
  EXPECT_NO_THROW(RunPool(good));
  // Window larger than the padded input.
  PoolCase c = good;
  c.ksize = {5, 2};
  EXPECT_THROW(RunPool(c), Error);
  c = good;
  c.ksize = {3, 7};
  c.paddings = {1, 1};
  EXPECT_THROW(RunPool(c), Error);
  // Padding as large as the window would give windows of padding only.
  c = good;
  c.paddings = {2, 0};
  EXPECT_THROW(RunPool(c), Error);
  // Wrong rank.
  c = good;
  c.x = {2, 4, 4};
  EXPECT_THROW(RunPool(c), Error);
  // Bad attributes.
  c = good;
  c.type = "min";
  EXPECT_THROW(RunPool(c), Error);
  c = good;
  c.ksize = {2, 2, 2};
  EXPECT_THROW(RunPool(c), Error);
  c = good;
  c.ksize = {0, 2};
  EXPECT_THROW(RunPool(c), Error);
  c = good;
  c.strides = {1, 0};
  EXPECT_THROW(RunPool(c), Error);
  // ksize is required.
  EXPECT_THROW(RunOp({"pool2d",
                      {{"X", {RandomTensor({1, 1, 4, 4}, 1)}}},
                      {{"Out", 1}},
                      [](proto::OpDesc* op) { SetAttr(op, "pooling_type", "avg"); }}),
               Error);
}

}  // namespace pool2d_op_test
}  // namespace rill::testing
