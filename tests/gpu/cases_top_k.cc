// Agreement cases of top_k and top_k_grad's CUDA kernels
// (ops/tensor/top_k_cuda.cu). All exact (atol 0, rtol 0): top_k picks
// values and their indices, with the CPU's order for equal ones (the
// Indices outputs show it), and top_k_grad adds each row's picks in the
// CPU's order. The cases take both of top_k's ways (k up to 16: the
// insertion scan; larger: a sort), every dtype, rows full of ties, -0 beside
// +0, infinities, the extremes of the integer types, and NaN that the CPU's
// scan passes over (a NaN it keeps could not be compared: NaN equals
// nothing; the insertion kernel is the CPU's scan step for step).
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using testing::RandomTensor;

constexpr DataType f32 = DataType::kFloat32;
constexpr DataType f64 = DataType::kFloat64;

Case TopK(const Tensor& x, int k) {
  return {"top_k", {{"X", x}}, {"Out", "Indices"}, 0, 0, {{"k", IntAttr("k", k)}}};
}

// Values in {-2, -1.5, ..., 2}: rows full of ties, with -0 in place of every
// other zero.
Tensor Coarse(const Shape& shape, uint64_t seed, DataType dtype) {
  Tensor t = RandomTensor(shape, seed, -2.2, 2.2, dtype);
  VisitFloatType(dtype, [&]<class T>() {
    T* v = t.mutable_data<T>();
    bool negative = false;
    for (int64_t i = 0; i < t.numel(); ++i) {
      v[i] = std::round(v[i] * T(2)) / T(2);
      if (v[i] == T(0)) {
        v[i] = negative ? -T(0) : T(0);
        negative = !negative;
      }
    }
  });
  return t;
}

// Random values with `special` written at every `every`-th element from `from`.
template <class T>
Tensor With(Tensor t, T special, int64_t from, int64_t every) {
  T* v = t.mutable_data<T>();
  for (int64_t i = from; i < t.numel(); i += every) v[i] = special;
  return t;
}

// Indices [rows, k] into rows of cols: (r * shift + j * step) % cols, distinct
// within a row when step and cols are coprime and k <= cols.
Tensor Picks(int64_t rows, int64_t cols, int64_t k, int64_t step, int64_t shift) {
  std::vector<int64_t> values;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < k; ++j) values.push_back((r * shift + j * step) % cols);
  }
  return testing::MakeTensor<int64_t>({rows, k}, values);
}

void ForwardCases(std::vector<Case>& cases) {
  const Tensor x = RandomTensor({257, 1000}, 401, -1, 1, f32);
  for (int k : {1, 5, 16, 17, 100, 1000}) cases.push_back(TopK(x, k));
  const Tensor ties = Coarse({64, 50}, 402, f32);
  for (int k : {1, 5, 16, 17, 40, 50}) cases.push_back(TopK(ties, k));
  const Tensor ties64 = Coarse({33, 20}, 403, f64);
  for (int k : {3, 16, 20}) cases.push_back(TopK(ties64, k));
  cases.push_back(TopK(RandomTensor({10, 300}, 404), 64));
  // Integers in [-3, 3) with the type's extremes among them.
  constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
  constexpr int32_t kMax32 = std::numeric_limits<int32_t>::max();
  const Tensor i32 = With<int32_t>(
      With<int32_t>(RandomTensor({20, 30}, 405, -3, 3, DataType::kInt32), kMin32, 3, 7), kMax32, 5,
      11);
  for (int k : {4, 16, 25, 30}) cases.push_back(TopK(i32, k));
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
  const Tensor i64 = With<int64_t>(
      With<int64_t>(RandomTensor({20, 30}, 406, -3, 3, DataType::kInt64), kMin64, 1, 6), kMax64, 4,
      13);
  for (int k : {7, 30}) cases.push_back(TopK(i64, k));
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const Tensor inf = With<float>(With<float>(Coarse({8, 24}, 407, f32), kInf, 2, 9), -kInf, 0, 5);
  for (int k : {6, 20, 24}) cases.push_back(TopK(inf, k));
  // NaN after each row's first k values: the insertion scan passes over it
  // (it is not above the last of a full list), on the CPU and here.
  Tensor nan = RandomTensor({8, 20}, 408, -1, 1, f32);
  for (int64_t r = 0; r < 8; ++r) {
    nan.mutable_data<float>()[r * 20 + 9] = std::numeric_limits<float>::quiet_NaN();
    nan.mutable_data<float>()[r * 20 + 17 - r] = -std::numeric_limits<float>::quiet_NaN();
  }
  for (int k : {1, 5, 9}) cases.push_back(TopK(nan, k));
  // Other ranks; no rows; many rows (beyond one launch's grid); many short
  // rows sorted; one long row.
  const Tensor row = RandomTensor({1000}, 409, -1, 1, f32);
  cases.push_back(TopK(row, 3));
  cases.push_back(TopK(row, 20));
  cases.push_back(TopK(RandomTensor({4, 3, 10}, 410, -5, 5, f32), 10));
  cases.push_back(TopK(Tensor(f32, {0, 5}), 2));
  cases.push_back(TopK(RandomTensor({1100000, 2}, 411, -1, 1, f32), 1));
  cases.push_back(TopK(Coarse({3000, 40}, 412, f32), 20));
  const Tensor long_row = RandomTensor({1, 100000}, 413, -1, 1, f32);
  cases.push_back(TopK(long_row, 5));
  cases.push_back(TopK(long_row, 17));
}

void GradCases(std::vector<Case>& cases) {
  const Tensor x = RandomTensor({257, 1000}, 421, -1, 1, f32);
  const Tensor idx = Picks(257, 1000, 5, 7, 13);
  const Tensor dout = With<float>(RandomTensor({257, 5}, 422, -1, 1, f32), -0.0f, 0, 9);
  cases.push_back(
      {"top_k_grad", {{"X", x}, {"Indices", idx}, {"Out@GRAD", dout}}, {"X@GRAD"}, 0, 0});
  cases.push_back({"top_k_grad", {{"X", x}, {"Indices", idx}}, {"X@GRAD"}, 0, 0});  // zeros
  // Every position of each row.
  const Tensor x64 = RandomTensor({33, 20}, 423);
  const Tensor all = Picks(33, 20, 20, 3, 1);
  cases.push_back({"top_k_grad",
                   {{"X", x64}, {"Indices", all}, {"Out@GRAD", RandomTensor({33, 20}, 424)}},
                   {"X@GRAD"},
                   0,
                   0});
  // Repeated indices (not top_k's own output): added in the CPU's order.
  const Tensor repeated = testing::MakeTensor<int64_t>(
      {4, 6}, {1, 1, 3, 1, 0, 3, 4, 4, 4, 4, 4, 4, 0, 1, 2, 3, 4, 0, 2, 2, 1, 1, 2, 2});
  cases.push_back({"top_k_grad",
                   {{"X", RandomTensor({4, 5}, 425, -1, 1, f32)},
                    {"Indices", repeated},
                    {"Out@GRAD", RandomTensor({4, 6}, 426, -1e3, 1e3, f32)}},
                   {"X@GRAD"},
                   0,
                   0});
  // Rank 1; no rows.
  cases.push_back({"top_k_grad",
                   {{"X", RandomTensor({1000}, 427)},
                    {"Indices", testing::MakeTensor<int64_t>({5}, {999, 0, 500, 3, 42})},
                    {"Out@GRAD", RandomTensor({5}, 428)}},
                   {"X@GRAD"},
                   0,
                   0});
  cases.push_back({"top_k_grad",
                   {{"X", Tensor(f32, {0, 5})},
                    {"Indices", Tensor(DataType::kInt64, {0, 2})},
                    {"Out@GRAD", Tensor(f32, {0, 2})}},
                   {"X@GRAD"},
                   0,
                   0});
}

}  // namespace

std::vector<Case> TopKCases() {
  std::vector<Case> cases;
  ForwardCases(cases);
  GradCases(cases);
  return cases;
}

}  // namespace rill
