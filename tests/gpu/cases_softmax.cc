// Agreement cases of the softmax-family CUDA kernels (ops/nn/softmax_cuda.cu,
// ops/nn/softmax_axis_cuda.cu): softmax (along any axis, with a mask),
// softmax_with_cross_entropy, cross_entropy (and their gradients) and
// accuracy.
//
// Tolerances. The CUDA kernels take every row sum in the CPU's order (left to
// right) with each operation rounded on its own (the _rn intrinsics; the
// x86-64 CPU build has no FMA), and the max is exact, so:
// - the gradients (softmax_grad, softmax_with_cross_entropy_grad,
//   cross_entropy_grad) use only +, -, *, / on the same values in the same
//   order: bit for bit, atol = rtol = 0;
// - accuracy counts integers: exact;
// - what goes through exp or log differs where CUDA's expf/logf (up to 2 and
//   1 ulp) and exp/log (1 ulp) differ from glibc's (under 1 ulp): a few ulp
//   relative, which the sums of positive terms and 1 / sum pass on unchanged
//   in order: rtol 1e-5 (float32, about 80 ulp) and 1e-12 (float64);
// - softmax_with_cross_entropy's Loss is sum(label) * (max + log(sum)) -
//   sum(label * logits): its error is an ulp or two of max + log(sum) (up to
//   about 57 for logits in [-50, 50]: 3.8e-6 in float32, 7e-15 in float64),
//   times sum(label), however small the loss itself (the label's logit near
//   the max): atol 1e-5 (float32) and 1e-12 (float64); Softmax, checked under
//   the same tolerance there, is checked tightly by the softmax cases (the
//   same device code).
#include <cstdint>
#include <vector>

#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

std::vector<std::pair<std::string, proto::Attr>> Soft() {
  return {{"soft_label", BoolAttr("soft_label", true)}};
}

std::vector<std::pair<std::string, proto::Attr>> Hard() {
  return {{"soft_label", BoolAttr("soft_label", false)}};
}

// Hard labels [rows, 1] spread over [0, cols).
Tensor Labels(int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<int64_t> values(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    values[static_cast<size_t>(r)] = static_cast<int64_t>((r * 7919 + seed * 31 + 3) % cols);
  }
  return testing::MakeTensor<int64_t>({rows, 1}, values);
}

// Probabilities in [0, 1) with zeros and values under cross_entropy's floor
// of 1e-20 (so the clamp is taken), some of them at the labels' places.
Tensor Probabilities(int64_t rows, int64_t cols, uint64_t seed, DataType dtype,
                     const Tensor* labels) {
  Tensor p = testing::RandomTensor({rows, cols}, seed, 0, 1, dtype);
  VisitFloatType(dtype, [&]<class T>() {
    T* v = p.mutable_data<T>();
    for (int64_t i = 0; i < rows * cols; i += 7) v[i] = T(0);
    for (int64_t i = 3; i < rows * cols; i += 11) v[i] = T(1e-30);
    if (labels != nullptr) {
      const int64_t* l = labels->data<int64_t>();
      for (int64_t r = 0; r < rows; r += 3) v[r * cols + l[r]] = r % 2 == 0 ? T(0) : T(1e-25);
    }
  });
  return p;
}

void SoftmaxFamily(std::vector<Case>& cases) {
  using testing::RandomTensor;
  constexpr DataType f32 = DataType::kFloat32;
  constexpr DataType f64 = DataType::kFloat64;
  // softmax: batch 1 and 257, 10 and 1000 classes, logits in [-1, 1] and out
  // to +-50 (exp(50) overflows nothing only after the max is subtracted).
  const Tensor a = RandomTensor({257, 1000}, 11, -1, 1, f32);
  const Tensor b = RandomTensor({257, 1000}, 12, -50, 50, f32);
  const Tensor c = RandomTensor({1, 10}, 13, -50, 50, f32);
  const Tensor d = RandomTensor({1, 1000}, 14, -1, 1, f32);
  const Tensor e = RandomTensor({257, 10}, 15, -50, 50, f32);
  const Tensor r3 = RandomTensor({4, 3, 10}, 16, -5, 5, f32);  // rank 3: rows are 4 * 3
  const Tensor a64 = RandomTensor({257, 1000}, 21, -1, 1, f64);
  const Tensor b64 = RandomTensor({257, 1000}, 22, -50, 50, f64);
  const Tensor c64 = RandomTensor({1, 10}, 23, -50, 50, f64);
  const Tensor e64 = RandomTensor({257, 10}, 25, -1, 1, f64);
  for (const Tensor* x : {&a, &b, &c, &d, &e, &r3}) {
    cases.push_back({"softmax", {{"X", *x}}, {"Out"}, 1e-7, 1e-5});
  }
  for (const Tensor* x : {&a64, &b64, &c64, &e64}) {
    cases.push_back({"softmax", {{"X", *x}}, {"Out"}, 1e-15, 1e-12});
  }

  // softmax_grad: Out in (0, 1), with and without Out@GRAD; bit for bit.
  const Tensor y = RandomTensor({257, 1000}, 31, 0, 1, f32);
  const Tensor dy = RandomTensor({257, 1000}, 32, -1, 1, f32);
  const Tensor y1 = RandomTensor({1, 10}, 33, 0, 1, f32);
  const Tensor dy1 = RandomTensor({1, 10}, 34, -1, 1, f32);
  const Tensor y64 = RandomTensor({257, 10}, 35, 0, 1, f64);
  const Tensor dy64 = RandomTensor({257, 10}, 36, -1, 1, f64);
  const Tensor y164 = RandomTensor({1, 1000}, 37, 0, 1, f64);
  const Tensor dy164 = RandomTensor({1, 1000}, 38, -1, 1, f64);
  cases.push_back({"softmax_grad", {{"Out", y}, {"Out@GRAD", dy}}, {"X@GRAD"}, 0, 0});
  cases.push_back({"softmax_grad", {{"Out", y1}, {"Out@GRAD", dy1}}, {"X@GRAD"}, 0, 0});
  cases.push_back({"softmax_grad", {{"Out", y64}, {"Out@GRAD", dy64}}, {"X@GRAD"}, 0, 0});
  cases.push_back({"softmax_grad", {{"Out", y164}, {"Out@GRAD", dy164}}, {"X@GRAD"}, 0, 0});
  cases.push_back({"softmax_grad", {{"Out", y}}, {"X@GRAD"}, 0, 0});  // no Out@GRAD: zeros
  cases.push_back({"softmax_grad", {{"Out", y64}}, {"X@GRAD"}, 0, 0});

  // softmax along other axes and with a mask (softmax_axis_cuda.cu): the
  // same tolerances, the gradient bit for bit. Attention's padding mask
  // [B, 1, 1, T] on scores [B, H, T, T] (the batches keep 37, 26, 15 keys), a mask
  // along an inner axis with a column masked everywhere (zeros), axes 0 and 1.
  const auto axis = [](int value) {
    return std::vector<std::pair<std::string, proto::Attr>>{{"axis", IntAttr("axis", value)}};
  };
  const Tensor scores = RandomTensor({3, 4, 37, 37}, 41, -8, 8, f32);
  std::vector<float> padding(3 * 37);
  for (int64_t i = 0; i < 3 * 37; ++i) padding[i] = i % 37 < 37 - 11 * (i / 37) ? 1.0f : 0.0f;
  const Tensor pad_mask = testing::MakeTensor<float>({3, 1, 1, 37}, padding);
  cases.push_back({"softmax", {{"X", scores}, {"Mask", pad_mask}}, {"Out"}, 1e-7, 1e-5});
  const Tensor inner = RandomTensor({5, 300, 6}, 42, -5, 5, f64);
  std::vector<double> columns(300 * 6);
  for (size_t i = 0; i < columns.size(); ++i) columns[i] = (i % 6 == 2 || i % 7 == 0) ? 0 : 1;
  const Tensor inner_mask = testing::MakeTensor<double>({300, 6}, columns);
  cases.push_back(
      {"softmax", {{"X", inner}, {"Mask", inner_mask}}, {"Out"}, 1e-15, 1e-12, axis(1)});
  cases.push_back({"softmax", {{"X", r3}}, {"Out"}, 1e-7, 1e-5, axis(0)});
  cases.push_back({"softmax", {{"X", r3}}, {"Out"}, 1e-7, 1e-5, axis(-2)});
  const Tensor ya = RandomTensor({4, 300, 5}, 43, 0, 1, f32);
  const Tensor dya = RandomTensor({4, 300, 5}, 44, -1, 1, f32);
  cases.push_back({"softmax_grad", {{"Out", ya}, {"Out@GRAD", dya}}, {"X@GRAD"}, 0, 0, axis(1)});
  cases.push_back({"softmax_grad", {{"Out", ya}, {"Out@GRAD", dya}}, {"X@GRAD"}, 0, 0, axis(0)});
  cases.push_back({"softmax_grad", {{"Out", ya}}, {"X@GRAD"}, 0, 0, axis(1)});

  // softmax_with_cross_entropy: hard labels (int64 [N, 1]) and soft ones
  // (non-negative, not normalised: the loss scales by their sum).
  const Tensor l257k = Labels(257, 1000, 1);
  const Tensor l1k = Labels(1, 1000, 2);
  const Tensor l257 = Labels(257, 10, 3);
  const Tensor l1 = Labels(1, 10, 4);
  const Tensor s257 = RandomTensor({257, 10}, 41, 0, 1, f32);
  const Tensor s257k = RandomTensor({257, 1000}, 42, 0, 1, f32);
  const Tensor s1k64 = RandomTensor({1, 1000}, 43, 0, 1, f64);
  const Tensor s25764 = RandomTensor({257, 10}, 44, 0, 1, f64);
  const std::vector<std::string> swce_out = {"Softmax", "Loss"};
  cases.push_back({"softmax_with_cross_entropy",
                   {{"Logits", b}, {"Label", l257k}},
                   swce_out,
                   1e-5,
                   1e-5,
                   Hard()});
  cases.push_back({"softmax_with_cross_entropy",
                   {{"Logits", a}, {"Label", l257k}},
                   swce_out,
                   1e-5,
                   1e-5});  // soft_label left at its default (false)
  cases.push_back(
      {"softmax_with_cross_entropy", {{"Logits", c}, {"Label", l1}}, swce_out, 1e-5, 1e-5, Hard()});
  cases.push_back({"softmax_with_cross_entropy",
                   {{"Logits", d}, {"Label", l1k}},
                   swce_out,
                   1e-5,
                   1e-5,
                   Hard()});
  cases.push_back({"softmax_with_cross_entropy",
                   {{"Logits", e}, {"Label", s257}},
                   swce_out,
                   1e-5,
                   1e-5,
                   Soft()});
  cases.push_back({"softmax_with_cross_entropy",
                   {{"Logits", b}, {"Label", s257k}},
                   swce_out,
                   1e-5,
                   1e-5,
                   Soft()});
  cases.push_back({"softmax_with_cross_entropy",
                   {{"Logits", b64}, {"Label", l257k}},
                   swce_out,
                   1e-12,
                   1e-12,
                   Hard()});
  cases.push_back({"softmax_with_cross_entropy",
                   {{"Logits", c64}, {"Label", l1}},
                   swce_out,
                   1e-12,
                   1e-12,
                   Hard()});
  cases.push_back({"softmax_with_cross_entropy",
                   {{"Logits", e64}, {"Label", l257}},
                   swce_out,
                   1e-12,
                   1e-12,
                   Hard()});
  cases.push_back({"softmax_with_cross_entropy",
                   {{"Logits", RandomTensor({1, 1000}, 26, -50, 50, f64)}, {"Label", s1k64}},
                   swce_out,
                   1e-12,
                   1e-12,
                   Soft()});
  cases.push_back({"softmax_with_cross_entropy",
                   {{"Logits", e64}, {"Label", s25764}},
                   swce_out,
                   1e-12,
                   1e-12,
                   Soft()});

  // softmax_with_cross_entropy_grad: with and without Loss@GRAD; bit for bit.
  const Tensor dl257 = RandomTensor({257, 1}, 51, -1, 1, f32);
  const Tensor dl1 = RandomTensor({1, 1}, 52, -1, 1, f32);
  const Tensor dl25764 = RandomTensor({257, 1}, 53, -1, 1, f64);
  const Tensor dl164 = RandomTensor({1, 1}, 54, -1, 1, f64);
  const Tensor sm257 = RandomTensor({257, 10}, 55, 0, 1, f32);
  const Tensor sm164 = RandomTensor({1, 1000}, 56, 0, 1, f64);
  const Tensor sm25764 = RandomTensor({257, 10}, 57, 0, 1, f64);
  const std::vector<std::string> dlogits = {"Logits@GRAD"};
  const char* swce_grad = "softmax_with_cross_entropy_grad";
  cases.push_back(
      {swce_grad, {{"Softmax", y}, {"Label", l257k}, {"Loss@GRAD", dl257}}, dlogits, 0, 0, Hard()});
  cases.push_back({swce_grad, {{"Softmax", y1}, {"Label", l1}, {"Loss@GRAD", dl1}}, dlogits, 0, 0});
  cases.push_back({swce_grad, {{"Softmax", y}, {"Label", l257k}}, dlogits, 0, 0, Hard()});
  cases.push_back({swce_grad,
                   {{"Softmax", sm25764}, {"Label", l257}, {"Loss@GRAD", dl25764}},
                   dlogits,
                   0,
                   0,
                   Hard()});
  cases.push_back({swce_grad,
                   {{"Softmax", sm164}, {"Label", l1k}, {"Loss@GRAD", dl164}},
                   dlogits,
                   0,
                   0,
                   Hard()});
  cases.push_back({swce_grad,
                   {{"Softmax", sm257}, {"Label", s257}, {"Loss@GRAD", dl257}},
                   dlogits,
                   0,
                   0,
                   Soft()});
  cases.push_back(
      {swce_grad, {{"Softmax", y}, {"Label", s257k}, {"Loss@GRAD", dl257}}, dlogits, 0, 0, Soft()});
  cases.push_back({swce_grad,
                   {{"Softmax", sm164}, {"Label", s1k64}, {"Loss@GRAD", dl164}},
                   dlogits,
                   0,
                   0,
                   Soft()});
  cases.push_back({swce_grad, {{"Softmax", sm257}, {"Label", s257}}, dlogits, 0, 0, Soft()});
  cases.push_back({swce_grad, {{"Softmax", sm25764}, {"Label", s25764}}, dlogits, 0, 0, Soft()});

  // cross_entropy: probabilities with zeros and values under the 1e-20 floor.
  const Tensor p257k = Probabilities(257, 1000, 61, f32, &l257k);
  const Tensor p1 = Probabilities(1, 10, 62, f32, &l1);
  const Tensor p257 = Probabilities(257, 10, 63, f32, &l257);
  const Tensor p25764 = Probabilities(257, 10, 64, f64, &l257);
  const Tensor p1k64 = Probabilities(1, 1000, 65, f64, &l1k);
  const Tensor p257k64 = Probabilities(257, 1000, 66, f64, &l257k);
  cases.push_back({"cross_entropy", {{"X", p257k}, {"Label", l257k}}, {"Y"}, 1e-7, 1e-5, Hard()});
  cases.push_back({"cross_entropy", {{"X", p1}, {"Label", l1}}, {"Y"}, 1e-7, 1e-5});
  cases.push_back({"cross_entropy", {{"X", p25764}, {"Label", l257}}, {"Y"}, 1e-15, 1e-12, Hard()});
  cases.push_back({"cross_entropy", {{"X", p1k64}, {"Label", l1k}}, {"Y"}, 1e-15, 1e-12, Hard()});
  cases.push_back({"cross_entropy", {{"X", p257}, {"Label", s257}}, {"Y"}, 1e-6, 1e-5, Soft()});
  cases.push_back({"cross_entropy", {{"X", p257k}, {"Label", s257k}}, {"Y"}, 1e-6, 1e-5, Soft()});
  cases.push_back({"cross_entropy", {{"X", p1k64}, {"Label", s1k64}}, {"Y"}, 1e-12, 1e-12, Soft()});
  cases.push_back(
      {"cross_entropy", {{"X", p25764}, {"Label", s25764}}, {"Y"}, 1e-12, 1e-12, Soft()});

  // cross_entropy_grad: with and without Y@GRAD; bit for bit.
  const char* ce_grad = "cross_entropy_grad";
  cases.push_back(
      {ce_grad, {{"X", p257k}, {"Label", l257k}, {"Y@GRAD", dl257}}, {"X@GRAD"}, 0, 0, Hard()});
  cases.push_back({ce_grad, {{"X", p1}, {"Label", l1}, {"Y@GRAD", dl1}}, {"X@GRAD"}, 0, 0});
  cases.push_back(
      {ce_grad, {{"X", p25764}, {"Label", l257}, {"Y@GRAD", dl25764}}, {"X@GRAD"}, 0, 0, Hard()});
  cases.push_back({ce_grad, {{"X", p257k}, {"Label", l257k}}, {"X@GRAD"}, 0, 0, Hard()});
  cases.push_back({ce_grad, {{"X", p1k64}, {"Label", l1k}}, {"X@GRAD"}, 0, 0, Hard()});
  cases.push_back(
      {ce_grad, {{"X", p257}, {"Label", s257}, {"Y@GRAD", dl257}}, {"X@GRAD"}, 0, 0, Soft()});
  cases.push_back(
      {ce_grad, {{"X", p1k64}, {"Label", s1k64}, {"Y@GRAD", dl164}}, {"X@GRAD"}, 0, 0, Soft()});
  cases.push_back({ce_grad, {{"X", p257}, {"Label", s257}}, {"X@GRAD"}, 0, 0, Soft()});
  cases.push_back({ce_grad, {{"X", p25764}, {"Label", s25764}}, {"X@GRAD"}, 0, 0, Soft()});

  // accuracy: top-5 indices over 10 classes against labels [N, 1] and [N].
  std::vector<int64_t> idx(257 * 5);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>((i * 37 + i / 5) % 10);
  const Tensor indices = testing::MakeTensor<int64_t>({257, 5}, idx);
  const Tensor top = RandomTensor({257, 5}, 71, 0, 1, f32);
  cases.push_back({"accuracy",
                   {{"Out", top}, {"Indices", indices}, {"Label", l257}},
                   {"Accuracy", "Correct", "Total"},
                   0,
                   0});
  std::vector<int64_t> flat(257);
  for (size_t r = 0; r < flat.size(); ++r) flat[r] = static_cast<int64_t>((r * 3) % 10);
  cases.push_back(
      {"accuracy",
       {{"Out", top}, {"Indices", indices}, {"Label", testing::MakeTensor<int64_t>({257}, flat)}},
       {"Accuracy"},
       0,
       0});
  cases.push_back({"accuracy",
                   {{"Out", RandomTensor({1, 1}, 72, 0, 1, f32)},
                    {"Indices", testing::MakeTensor<int64_t>({1, 1}, {4})},
                    {"Label", l1}},
                   {"Accuracy", "Correct", "Total"},
                   0,
                   0});
}

}  // namespace

std::vector<Case> SoftmaxCases() {
  std::vector<Case> cases;
  SoftmaxFamily(cases);
  return cases;
}

}  // namespace rill
