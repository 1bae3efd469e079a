// Agreement cases of the shape ops' CUDA kernels (ops/tensor/shape_cuda.cu):
// concat, split, reshape, transpose and the gradients of concat, split and
// reshape (transpose's gradient is a transpose). All exact (atol 0, rtol 0):
// the kernels move bytes. The cases cover every dtype, negative axes, parts
// of odd byte widths (the copies move words as wide as the addresses allow),
// empty parts, gradients paired with their variables by name, missing
// gradients (zeros), and sizes beyond one launch's grid.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using testing::MakeTensor;
using testing::RandomTensor;

constexpr DataType f32 = DataType::kFloat32;
constexpr DataType f64 = DataType::kFloat64;

// Integers of `dtype` (int32 or int64) counting up from `first`, in `shape`.
Tensor Counting(const Shape& shape, DataType dtype, int64_t first) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == DataType::kInt32) {
      t.mutable_data<int32_t>()[i] = static_cast<int32_t>(first + i);
    } else {
      t.mutable_data<int64_t>()[i] = first + i;
    }
  }
  return t;
}

// Variables x0, x1, ... holding `values`.
std::vector<std::pair<std::string, Tensor>> Named(const std::string& prefix,
                                                  const std::vector<Tensor>& values) {
  std::vector<std::pair<std::string, Tensor>> vars;
  for (size_t i = 0; i < values.size(); ++i)
    vars.push_back({prefix + std::to_string(i), values[i]});
  return vars;
}

std::vector<std::string> Names(const std::string& prefix, int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.push_back(prefix + std::to_string(i));
  return names;
}

Case Concat(const std::vector<Tensor>& xs, int axis) {
  Case c{"concat", {}, {"Out"}, 0, 0, {{"axis", IntAttr("axis", axis)}}};
  c.input_lists["X"] = Named("x", xs);
  return c;
}

// concat_grad with X@GRAD bound to `grads` (names of the x<i> inputs'
// gradients); dout may be Tensor() (no Out@GRAD).
Case ConcatGrad(const std::vector<Tensor>& xs, int axis, const Tensor& dout,
                std::vector<std::string> grads) {
  Case c{"concat_grad", {}, {}, 0, 0, {{"axis", IntAttr("axis", axis)}}};
  c.input_lists["X"] = Named("x", xs);
  if (dout.initialized()) c.inputs["Out@GRAD"] = dout;
  c.output_lists["X@GRAD"] = std::move(grads);
  return c;
}

// split into `parts` outputs by `num` or `sections` (whichever is non-empty/non-zero).
Case Split(const Tensor& x, int parts, int axis, int num, const std::vector<int64_t>& sections) {
  Case c{"split", {{"X", x}}, {}, 0, 0, {{"axis", IntAttr("axis", axis)}}};
  if (num != 0) c.attrs.push_back({"num", IntAttr("num", num)});
  if (!sections.empty()) c.attrs.push_back({"sections", IntsAttr("sections", sections)});
  c.output_lists["Out"] = Names("part", parts);
  return c;
}

// split_grad of X into the parts named part0, part1, ... with Out@GRAD bound
// to `grads` (name, value; a Tensor() value is bound but holds nothing).
Case SplitGrad(const Tensor& x, int parts, int axis, const std::vector<int64_t>& sections,
               std::vector<std::pair<std::string, Tensor>> grads) {
  Case c{"split_grad", {{"X", x}}, {"X@GRAD"}, 0, 0, {{"axis", IntAttr("axis", axis)}}};
  if (!sections.empty()) c.attrs.push_back({"sections", IntsAttr("sections", sections)});
  for (const std::string& name : Names("part", parts)) c.input_lists["Out"].push_back({name, {}});
  c.input_lists["Out@GRAD"] = std::move(grads);
  return c;
}

Case Reshape(const Tensor& x, const std::vector<int64_t>& shape) {
  return {"reshape", {{"X", x}}, {"Out"}, 0, 0, {{"shape", IntsAttr("shape", shape)}}};
}

Case Transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  return {"transpose", {{"X", x}}, {"Out"}, 0, 0, {{"axis", IntsAttr("axis", perm)}}};
}

void ConcatCases(std::vector<Case>& cases) {
  const Tensor a = RandomTensor({2, 3}, 301, -1, 1, f32);
  const Tensor b = RandomTensor({4, 3}, 302, -1, 1, f32);
  const Tensor c = RandomTensor({1, 3}, 303, -1, 1, f32);
  cases.push_back(Concat({a, b, c}, 0));
  cases.push_back(Concat({a}, 0));
  // Rank 3 along the middle: rows of 96, 32 and 160 bytes per outer index.
  const Tensor d = RandomTensor({2, 3, 4}, 304);
  const Tensor e = RandomTensor({2, 1, 4}, 305);
  const Tensor f = RandomTensor({2, 5, 4}, 306);
  const Tensor none = Tensor(f64, {2, 0, 4});
  cases.push_back(Concat({d, e, none, f}, 1));
  cases.push_back(Concat({d, e, f}, -2));
  cases.push_back(Concat({d, d}, 2));
  // int32 along the last axis: parts of 12, 4 and 8 bytes at offsets 0, 12, 16.
  const Tensor i0 = Counting({5, 3}, DataType::kInt32, -7);
  const Tensor i1 = Counting({5, 1}, DataType::kInt32, 2147483600);
  const Tensor i2 = Counting({5, 2}, DataType::kInt32, -2147483600);
  cases.push_back(Concat({i0, i1, i2}, -1));
  cases.push_back(Concat({i1, i0}, 1));
  const Tensor l0 = Counting({3, 2}, DataType::kInt64, int64_t{1} << 40);
  const Tensor l1 = Counting({3, 5}, DataType::kInt64, -(int64_t{1} << 41));
  cases.push_back(Concat({l0, l1}, 1));
  cases.push_back(Concat({Tensor(f32, {0, 3}), Tensor(f32, {0, 2})}, 1));  // nothing to copy
  // 2000 rows of 4012 bytes: more words than one launch's grid has threads.
  const Tensor wide = RandomTensor({2000, 1000}, 307, -1, 1, f32);
  const Tensor narrow = RandomTensor({2000, 3}, 308, -1, 1, f32);
  cases.push_back(Concat({wide, narrow}, 1));

  // concat_grad: every gradient; only some, paired by name (a renamed second
  // contribution too); no Out@GRAD (zeros); int64.
  const Tensor dout = RandomTensor({2, 9, 4}, 309);
  cases.push_back(ConcatGrad({d, e, f}, 1, dout, {"x0@GRAD", "x1@GRAD", "x2@GRAD"}));
  cases.push_back(ConcatGrad({d, e, f}, 1, dout, {"x2@GRAD"}));
  cases.push_back(ConcatGrad({d, e, f}, -2, dout, {"x0@GRAD", "x2@GRAD@RENAME@1"}));
  cases.push_back(ConcatGrad({d, e, f}, 1, Tensor(), {"x0@GRAD", "x1@GRAD", "x2@GRAD"}));
  cases.push_back(ConcatGrad({i0, i1, i2}, 1, Counting({5, 6}, DataType::kInt32, 11),
                             {"x0@GRAD", "x1@GRAD", "x2@GRAD"}));
  cases.push_back(
      ConcatGrad({l0, l1}, 1, Counting({3, 7}, DataType::kInt64, -3), {"x0@GRAD", "x1@GRAD"}));
  cases.push_back(ConcatGrad({wide, narrow}, 1, RandomTensor({2000, 1003}, 310, -1, 1, f32),
                             {"x0@GRAD", "x1@GRAD"}));
}

void SplitCases(std::vector<Case>& cases) {
  const Tensor x = RandomTensor({6, 4}, 311, -1, 1, f32);
  cases.push_back(Split(x, 3, 0, 3, {}));
  cases.push_back(Split(x, 2, -1, 0, {}));  // num 0: one part per Out variable
  cases.push_back(Split(x, 1, 0, 0, {}));
  // Rank 3 along the middle, one size inferred; an empty part.
  const Tensor y = RandomTensor({3, 7, 2}, 312);
  cases.push_back(Split(y, 3, 1, 0, {2, -1, 1}));
  cases.push_back(Split(y, 3, -2, 0, {3, 0, 4}));
  cases.push_back(Split(y, 2, 2, 0, {1, 1}));
  // int32 along the last axis: parts of 4, 8 and 12 bytes.
  const Tensor i = Counting({4, 6}, DataType::kInt32, -12);
  cases.push_back(Split(i, 3, 1, 0, {1, 2, 3}));
  cases.push_back(Split(Counting({5, 3}, DataType::kInt64, int64_t{1} << 50), 5, 0, 5, {}));
  cases.push_back(Split(Tensor(f32, {0, 4}), 2, 1, 2, {}));
  const Tensor big = RandomTensor({2000, 1003}, 313, -1, 1, f32);
  cases.push_back(Split(big, 2, 1, 0, {1000, 3}));

  // split_grad: every gradient; one, paired by name (the others zeros); one
  // bound without a value (zeros); int32; beyond one grid.
  const Tensor g0 = RandomTensor({3, 2, 2}, 314);
  const Tensor g1 = RandomTensor({3, 4, 2}, 315);
  const Tensor g2 = RandomTensor({3, 1, 2}, 316);
  cases.push_back(
      SplitGrad(y, 3, 1, {2, -1, 1}, {{"part0@GRAD", g0}, {"part1@GRAD", g1}, {"part2@GRAD", g2}}));
  cases.push_back(SplitGrad(y, 3, 1, {2, -1, 1}, {{"part1@GRAD", g1}}));
  cases.push_back(SplitGrad(y, 3, 1, {2, -1, 1}, {}));
  cases.push_back(
      SplitGrad(y, 3, 1, {2, -1, 1}, {{"part0@GRAD", g0}, {"part1@GRAD", {}}, {"part2@GRAD", g2}}));
  cases.push_back(SplitGrad(i, 3, 1, {1, 2, 3},
                            {{"part0@GRAD", Counting({4, 1}, DataType::kInt32, 5)},
                             {"part2@GRAD", Counting({4, 3}, DataType::kInt32, -40)}}));
  cases.push_back(
      SplitGrad(big, 2, 1, {1000, 3}, {{"part1@GRAD", RandomTensor({2000, 3}, 317, -1, 1, f32)}}));
}

void ReshapeCases(std::vector<Case>& cases) {
  const Tensor x = RandomTensor({2, 3, 4}, 321, -1, 1, f32);
  cases.push_back(Reshape(x, {0, -1}));
  cases.push_back(Reshape(x, {4, 0, 2}));
  cases.push_back(Reshape(x, {-1}));
  cases.push_back(Reshape(RandomTensor({6}, 322), {2, 3}));
  cases.push_back(Reshape(Counting({6}, DataType::kInt32, -3), {3, -1}));
  cases.push_back(Reshape(Counting({2, 2}, DataType::kInt64, int64_t{1} << 45), {4, 1}));
  cases.push_back(Reshape(Tensor(f32, {0, 5}), {-1, 5}));
  // reshape_grad: with Out@GRAD (viewed in X's shape) and without (zeros).
  const Tensor dout = RandomTensor({6, 4}, 323, -1, 1, f32);
  cases.push_back({"reshape_grad", {{"X", x}, {"Out@GRAD", dout}}, {"X@GRAD"}, 0, 0});
  cases.push_back({"reshape_grad", {{"X", x}}, {"X@GRAD"}, 0, 0});
  cases.push_back({"reshape_grad",
                   {{"X", Counting({2, 3}, DataType::kInt64, 0)},
                    {"Out@GRAD", Counting({6}, DataType::kInt64, -9)}},
                   {"X@GRAD"},
                   0,
                   0});
  cases.push_back({"reshape_grad", {{"X", RandomTensor({1000}, 324)}}, {"X@GRAD"}, 0, 0});
}

void TransposeCases(std::vector<Case>& cases) {
  cases.push_back(Transpose(RandomTensor({2, 3}, 331, -1, 1, f32), {1, 0}));
  cases.push_back(Transpose(RandomTensor({37, 129}, 332, -1, 1, f32), {1, 0}));
  const Tensor x = RandomTensor({2, 3, 4}, 333);
  for (const std::vector<int64_t>& perm :
       std::vector<std::vector<int64_t>>{{0, 1, 2}, {2, 0, 1}, {1, 2, 0}, {1, 0, 2}, {0, 2, 1}}) {
    cases.push_back(Transpose(x, perm));
  }
  cases.push_back(Transpose(RandomTensor({2, 3, 4, 5}, 334, -1, 1, f32), {3, 1, 0, 2}));
  cases.push_back(Transpose(RandomTensor({1, 5, 1, 3}, 335), {3, 2, 1, 0}));  // dims of 1
  cases.push_back(Transpose(Counting({4, 3, 2}, DataType::kInt32, -5), {2, 0, 1}));
  cases.push_back(Transpose(Counting({3, 5}, DataType::kInt64, int64_t{1} << 42), {1, 0}));
  cases.push_back(Transpose(RandomTensor({7}, 336), {0}));
  cases.push_back(Transpose(RandomTensor({}, 337), {}));  // a scalar
  cases.push_back(Transpose(Tensor(f32, {0, 3}), {1, 0}));
  // Rank 16 (the most), reversed.
  std::vector<int64_t> reversed(16);
  for (int i = 0; i < 16; ++i) reversed[static_cast<size_t>(i)] = 15 - i;
  cases.push_back(Transpose(RandomTensor(Shape(16, 2), 338, -1, 1, f32), reversed));
  // More elements than one launch's grid has threads.
  cases.push_back(Transpose(RandomTensor({1100, 1000}, 339, -1, 1, f32), {1, 0}));
}

}  // namespace

std::vector<Case> ShapeCases() {
  std::vector<Case> cases;
  ConcatCases(cases);
  SplitCases(cases);
  ReshapeCases(cases);
  TransposeCases(cases);
  return cases;
}

}  // namespace rill
