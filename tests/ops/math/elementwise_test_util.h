// Shared checks for the binary elementwise ops: the forward result against a
// reference that broadcasts by index arithmetic of its own, and gradient
// checks over the broadcast patterns the ops support.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tests/testing/gradient_check.h"

namespace rill::testing {

// One way Y can meet X.
struct BroadcastCase {
  Shape x;
  Shape y;
  int axis;
};

inline std::vector<BroadcastCase> BroadcastCases() {
  return {
      {{2, 3}, {2, 3}, -1},        // same shape
      {{4, 5}, {5}, -1},           // a bias over the last dim (fc)
      {{2, 3, 4, 2}, {3}, 1},      // a bias over channels (conv)
      {{2, 3, 4}, {3, 4}, -1},     // trailing dims
      {{2, 3, 4}, {3, 1}, 1},      // trailing 1s of Y are dropped
      {{3, 4}, {1}, -1},           // one element broadcasts everywhere
      {{2, 3, 4}, {2}, 0},         // leading dim
  };
}

// Y's element that X's element `e` meets, computed from X's multi-index.
inline int64_t BroadcastIndex(const Shape& x, const Shape& y, int axis, int64_t e) {
  if (NumElements(y) == 1) return 0;
  Shape trimmed = y;
  while (trimmed.size() > 1 && trimmed.back() == 1) trimmed.pop_back();
  if (axis == -1) axis = static_cast<int>(x.size() - y.size());
  std::vector<int64_t> index(x.size());
  for (int d = static_cast<int>(x.size()) - 1; d >= 0; --d) {
    index[d] = e % x[d];
    e /= x[d];
  }
  int64_t yi = 0;
  for (size_t d = 0; d < trimmed.size(); ++d) yi = yi * trimmed[d] + index[axis + d];
  return yi;
}

// Random values in [low, high) pushed at least `gap` away from zero.
inline Tensor AwayFromZero(const Shape& shape, uint64_t seed, double gap) {
  Tensor t = RandomTensor(shape, seed);
  double* p = t.mutable_data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] += p[i] < 0 ? -gap : gap;
  return t;
}

// Runs `type` on every broadcast case (float64) and compares with f(x, y).
inline void ExpectForwardMatchesReference(const std::string& type,
                                          const std::function<double(double, double)>& f) {
  uint64_t seed = 10;
  for (const BroadcastCase& c : BroadcastCases()) {
    SCOPED_TRACE(ShapeToString(c.x) + " with " + ShapeToString(c.y) + " at axis " +
                 std::to_string(c.axis));
    Tensor x = AwayFromZero(c.x, seed++, 0.1);
    Tensor y = AwayFromZero(c.y, seed++, 0.1);
    auto out = RunOp({type,
                      {{"X", {x}}, {"Y", {y}}},
                      {{"Out", 1}},
                      [&](proto::OpDesc* op) { SetAttr(op, "axis", c.axis); }});
    const Tensor& o = out["Out"][0];
    ASSERT_EQ(o.shape(), c.x);
    for (int64_t e = 0; e < o.numel(); ++e) {
      const double want = f(x.GetAsDouble(e), y.GetAsDouble(BroadcastIndex(c.x, c.y, c.axis, e)));
      EXPECT_DOUBLE_EQ(o.GetAsDouble(e), want) << "element " << e;
    }
  }
}

// Gradient check of X and Y on every broadcast case. make_x / make_y give the
// inputs (e.g. kept away from a kink or a pole).
inline void ExpectGradientsMatchNumeric(
    const std::string& type,
    const std::function<Tensor(const Shape&, uint64_t)>& make_x = [](const Shape& s, uint64_t seed) {
      return RandomTensor(s, seed);
    },
    const std::function<Tensor(const Shape&, uint64_t)>& make_y = [](const Shape& s, uint64_t seed) {
      return RandomTensor(s, seed);
    }) {
  uint64_t seed = 100;
  for (const BroadcastCase& c : BroadcastCases()) {
    SCOPED_TRACE(ShapeToString(c.x) + " with " + ShapeToString(c.y) + " at axis " +
                 std::to_string(c.axis));
    seed += 2;
    GradientCheck(type)
        .Input("X", make_x(c.x, seed))
        .Input("Y", make_y(c.y, seed + 1))
        .Output("Out")
        .Attrs([&](proto::OpDesc* op) { SetAttr(op, "axis", c.axis); })
        .Run();
  }
}

// Shapes that do not broadcast are rejected when the op runs.
inline void ExpectMismatchedShapesThrow(const std::string& type) {
  auto run = [&](const Shape& x, const Shape& y, int axis) {
    RunOp({type,
           {{"X", {RandomTensor(x, 1)}}, {"Y", {RandomTensor(y, 2)}}},
           {{"Out", 1}},
           [&](proto::OpDesc* op) { SetAttr(op, "axis", axis); }});
  };
  EXPECT_THROW(run({2, 3}, {2}, -1), Error);     // trailing dims differ
  EXPECT_THROW(run({2, 3}, {2, 3, 1, 4}, -1), Error);  // Y has more dims
  EXPECT_THROW(run({2, 3, 4}, {3}, 2), Error);   // wrong axis
  EXPECT_THROW(run({2, 3}, {3}, 5), Error);      // axis out of range
}

}  // namespace rill::testing
