// Agreement cases of mul, mul_grad, matmul and matmul_grad's CUDA kernels
// (ops/math/gemm_op_cuda.cc, cuBLAS GEMMs): mul with the default flattening
// and with x_num_col_dims / y_num_col_dims above 1; matmul with every
// transpose_X / transpose_Y pair, rank 2, rank 3 with a batched Y and rank 3
// with a shared rank-2 Y, with alpha; both float32 and float64; products with
// an empty side or an inner dim of 0; batch dims that broadcast (a gradient
// then sums over the products that share a matrix); gradients with both
// outputs, with each alone and without Out@GRAD.
//
// Not exact: cuBLAS adds each product's K terms in an order of its own
// (blocked, with FMA, perhaps split over K), OpenBLAS in another. Both round
// as their type does (the cuBLAS handle keeps the default math mode: no
// TF32). Inputs are uniform in [-1, 1), so every term is at most 1 in size
// (matmul scales the tolerance by max(1, |alpha|)), and the cases allow
// |cpu - cuda| <= kUlps * sqrt(K) * eps (rtol 0), K the number of terms each
// output element sums (the inner dim; for a gradient, the dim it sums over),
// eps 2^-23 for float32 and 2^-52 for float64. With kUlps = 64: run through
// these kernels with a stand-in for cuBLAS that adds each element's terms one
// by one in float32 (an order less accurate than cuBLAS's), every case stays
// within 0.18 of its tolerance; with the operands rounded to TF32 first, every
// float32 case with a non-empty product exceeds it, by 18 to 57 times.
// Gradients without Out@GRAD are zeros on both sides: exact.
#include <algorithm>
#include <cmath>
#include <string>

#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using Attrs = std::vector<std::pair<std::string, proto::Attr>>;

constexpr double kUlps = 64;

// The tolerance for sums of k terms of at most 1 in `dtype`.
double SumTolerance(DataType dtype, int64_t k) {
  const double eps = dtype == DataType::kFloat32 ? std::ldexp(1.0, -23) : std::ldexp(1.0, -52);
  return kUlps * std::sqrt(static_cast<double>(k > 0 ? k : 1)) * eps;
}

// A gradient case of `type` computing `outputs` (a dO of null: none fed).
Case GradCase(const std::string& type, const Tensor& x, const Tensor& y, const Tensor* dout,
              std::vector<std::string> outputs, double tolerance, Attrs attrs) {
  Case c{type, {{"X", x}, {"Y", y}}, std::move(outputs), tolerance, 0, std::move(attrs)};
  if (dout != nullptr) c.inputs["Out@GRAD"] = *dout;
  return c;
}

// mul and mul_grad of X [x_shape] and Y [y_shape] flattened at xn and yn
// (inner dim k); out_shape is Out's shape.
void AddMulCases(std::vector<Case>* cases, const Shape& x_shape, const Shape& y_shape,
                 const Shape& out_shape, int xn, int yn, int64_t k, DataType dtype, uint64_t seed) {
  using testing::RandomTensor;
  const Tensor x = RandomTensor(x_shape, seed, -1, 1, dtype);
  const Tensor y = RandomTensor(y_shape, seed + 1, -1, 1, dtype);
  const Tensor dout = RandomTensor(out_shape, seed + 2, -1, 1, dtype);
  Attrs attrs;
  if (xn != 1) attrs.push_back({"x_num_col_dims", IntAttr("x_num_col_dims", xn)});
  if (yn != 1) attrs.push_back({"y_num_col_dims", IntAttr("y_num_col_dims", yn)});
  // X@GRAD sums over Out's columns, Y@GRAD over its rows.
  int64_t rows = 1;
  for (int i = 0; i < xn; ++i) rows *= x_shape[i];
  int64_t cols = 1;
  for (size_t i = yn; i < y_shape.size(); ++i) cols *= y_shape[i];
  const double tol_dx = SumTolerance(dtype, cols);
  const double tol_dy = SumTolerance(dtype, rows);
  const double tol = std::max(tol_dx, tol_dy);
  cases->push_back({"mul", {{"X", x}, {"Y", y}}, {"Out"}, SumTolerance(dtype, k), 0, attrs});
  cases->push_back(GradCase("mul_grad", x, y, &dout, {"X@GRAD", "Y@GRAD"}, tol, attrs));
  cases->push_back(GradCase("mul_grad", x, y, &dout, {"X@GRAD"}, tol_dx, attrs));
  cases->push_back(GradCase("mul_grad", x, y, &dout, {"Y@GRAD"}, tol_dy, attrs));
  cases->push_back(GradCase("mul_grad", x, y, nullptr, {"X@GRAD", "Y@GRAD"}, 0, attrs));
}

// How the matmul cases lay out their operands.
enum class Batching { kNone, kBatchedY, kSharedY };

// matmul and matmul_grad of op(X) [batch, m, k] and op(Y) [k, n] per Batching.
void AddMatmulCases(std::vector<Case>* cases, Batching batching, int64_t batch, int64_t m,
                    int64_t k, int64_t n, bool tx, bool ty, float alpha, DataType dtype,
                    uint64_t seed) {
  using testing::RandomTensor;
  Shape x_shape = tx ? Shape{k, m} : Shape{m, k};
  Shape y_shape = ty ? Shape{n, k} : Shape{k, n};
  Shape out_shape{m, n};
  if (batching != Batching::kNone) {
    x_shape.insert(x_shape.begin(), batch);
    out_shape.insert(out_shape.begin(), batch);
  }
  if (batching == Batching::kBatchedY) y_shape.insert(y_shape.begin(), batch);
  const Tensor x = RandomTensor(x_shape, seed, -1, 1, dtype);
  const Tensor y = RandomTensor(y_shape, seed + 1, -1, 1, dtype);
  const Tensor dout = RandomTensor(out_shape, seed + 2, -1, 1, dtype);
  Attrs attrs = {{"transpose_X", BoolAttr("transpose_X", tx)},
                 {"transpose_Y", BoolAttr("transpose_Y", ty)}};
  if (alpha != 1.0f) attrs.push_back({"alpha", FloatAttr("alpha", alpha)});
  // Out sums k terms, X@GRAD n, Y@GRAD m (times the batch when Y is shared);
  // alpha scales each term.
  const double scale = std::max(1.0, std::fabs(static_cast<double>(alpha)));
  const int64_t dy_terms = batching == Batching::kSharedY ? batch * m : m;
  const double tol_dx = scale * SumTolerance(dtype, n);
  const double tol_dy = scale * SumTolerance(dtype, dy_terms);
  const double tol = std::max(tol_dx, tol_dy);
  cases->push_back(
      {"matmul", {{"X", x}, {"Y", y}}, {"Out"}, scale * SumTolerance(dtype, k), 0, attrs});
  cases->push_back(GradCase("matmul_grad", x, y, &dout, {"X@GRAD", "Y@GRAD"}, tol, attrs));
  cases->push_back(GradCase("matmul_grad", x, y, &dout, {"X@GRAD"}, tol_dx, attrs));
  cases->push_back(GradCase("matmul_grad", x, y, &dout, {"Y@GRAD"}, tol_dy, attrs));
  cases->push_back(GradCase("matmul_grad", x, y, nullptr, {"X@GRAD", "Y@GRAD"}, 0, attrs));
}

// matmul and matmul_grad of X [x_shape] and Y [y_shape] whose batch dims
// broadcast to Out [out_shape] (no transposes); an X (Y) matrix is read by
// x_uses (y_uses) products, whose terms its gradient sums.
void AddBroadcastMatmulCases(std::vector<Case>* cases, const Shape& x_shape, const Shape& y_shape,
                             const Shape& out_shape, int64_t x_uses, int64_t y_uses, DataType dtype,
                             uint64_t seed) {
  using testing::RandomTensor;
  const Tensor x = RandomTensor(x_shape, seed, -1, 1, dtype);
  const Tensor y = RandomTensor(y_shape, seed + 1, -1, 1, dtype);
  const Tensor dout = RandomTensor(out_shape, seed + 2, -1, 1, dtype);
  const int64_t m = x_shape[x_shape.size() - 2];
  const int64_t k = x_shape.back();
  const int64_t n = y_shape.back();
  const double tol_dx = SumTolerance(dtype, n * x_uses);
  const double tol_dy = SumTolerance(dtype, m * y_uses);
  const Attrs attrs;
  cases->push_back({"matmul", {{"X", x}, {"Y", y}}, {"Out"}, SumTolerance(dtype, k), 0, attrs});
  cases->push_back(
      GradCase("matmul_grad", x, y, &dout, {"X@GRAD", "Y@GRAD"}, std::max(tol_dx, tol_dy), attrs));
  cases->push_back(GradCase("matmul_grad", x, y, &dout, {"X@GRAD"}, tol_dx, attrs));
  cases->push_back(GradCase("matmul_grad", x, y, &dout, {"Y@GRAD"}, tol_dy, attrs));
}

}  // namespace

std::vector<Case> GemmCases() {
  constexpr auto kF32 = DataType::kFloat32;
  constexpr auto kF64 = DataType::kFloat64;
  std::vector<Case> cases;
  // mul: plain matrices, an fc layer's shapes, flattened X and Y, empties.
  AddMulCases(&cases, {37, 129}, {129, 65}, {37, 65}, 1, 1, 129, kF32, 301);
  AddMulCases(&cases, {20, 50}, {50, 30}, {20, 30}, 1, 1, 50, kF64, 304);
  AddMulCases(&cases, {64, 784}, {784, 128}, {64, 128}, 1, 1, 784, kF32, 307);
  // X [2, 3, 4, 5] as [6, 20], Y [4, 5, 7] as [20, 7]: Out [2, 3, 7].
  AddMulCases(&cases, {2, 3, 4, 5}, {4, 5, 7}, {2, 3, 7}, 2, 2, 20, kF32, 310);
  AddMulCases(&cases, {2, 3, 4, 5}, {4, 5, 7}, {2, 3, 7}, 2, 2, 20, kF64, 313);
  // X [2, 3, 4, 5] as [24, 5], Y [5, 6]: Out [2, 3, 4, 6].
  AddMulCases(&cases, {2, 3, 4, 5}, {5, 6}, {2, 3, 4, 6}, 3, 1, 5, kF32, 316);
  // An empty Out (no rows: Y@GRAD is all zeros) and an inner dim of 0 (Out is
  // all zeros; X@GRAD and Y@GRAD are empty).
  AddMulCases(&cases, {0, 5}, {5, 3}, {0, 3}, 1, 1, 5, kF32, 319);
  AddMulCases(&cases, {4, 0}, {0, 3}, {4, 3}, 1, 1, 0, kF64, 322);

  // matmul: every transpose pair in every layout, float32 and float64.
  uint64_t seed = 401;
  for (const DataType dtype : {kF32, kF64}) {
    for (const Batching batching : {Batching::kNone, Batching::kBatchedY, Batching::kSharedY}) {
      for (const bool tx : {false, true}) {
        for (const bool ty : {false, true}) {
          const float alpha = tx == ty ? 1.0f : -0.75f;
          AddMatmulCases(&cases, batching, 5, 23, 47, 31, tx, ty, alpha, dtype, seed);
          seed += 3;
        }
      }
    }
  }
  // A batch of fc-sized products, with a shared Y and a batched one.
  AddMatmulCases(&cases, Batching::kSharedY, 4, 32, 256, 64, false, false, 1.0f, kF32, 501);
  AddMatmulCases(&cases, Batching::kSharedY, 4, 32, 256, 64, true, false, 1.0f, kF32, 504);
  AddMatmulCases(&cases, Batching::kBatchedY, 4, 32, 256, 64, false, true, 2.0f, kF32, 507);
  // Empty batches (a shared Y's gradient is then all zeros) and an inner dim of 0.
  for (const bool tx : {false, true}) {
    AddMatmulCases(&cases, Batching::kSharedY, 0, 4, 3, 2, tx, false, 1.0f, kF32, 510);
    AddMatmulCases(&cases, Batching::kBatchedY, 0, 4, 3, 2, tx, true, 1.0f, kF32, 513);
    AddMatmulCases(&cases, Batching::kNone, 1, 4, 0, 3, tx, false, 1.0f, kF64, 516);
    AddMatmulCases(&cases, Batching::kSharedY, 2, 4, 0, 3, tx, true, 1.0f, kF32, 519);
  }
  // Broadcast batch dims (attention's shapes): one X for every head, one Y
  // for every batch, a shared rank-2 X, and both sides broadcast.
  AddBroadcastMatmulCases(&cases, {2, 1, 9, 16}, {2, 4, 16, 9}, {2, 4, 9, 9}, 4, 1, kF32, 601);
  AddBroadcastMatmulCases(&cases, {2, 4, 9, 16}, {2, 1, 16, 9}, {2, 4, 9, 9}, 1, 4, kF64, 604);
  AddBroadcastMatmulCases(&cases, {9, 16}, {3, 16, 7}, {3, 9, 7}, 3, 1, kF32, 607);
  AddBroadcastMatmulCases(&cases, {2, 9, 16}, {3, 1, 16, 7}, {3, 2, 9, 7}, 3, 2, kF32, 610);
  return cases;
}

}  // namespace rill
