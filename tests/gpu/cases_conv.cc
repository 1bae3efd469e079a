// Agreement cases of the conv2d CUDA kernels (ops/nn/conv_cuda.cu): conv2d
// and conv2d_grad over every attribute the CPU kernel has (strides, paddings,
// dilations, groups: none, some, depthwise with and without a channel
// multiplier), the 1x1 stride-1 unpadded layout that skips im2col, a filter
// as large as the padded input, float32 and float64, each gradient output
// alone and Output@GRAD absent, and a float32 run large enough to take
// several chunks of images (3 images of 23 MiB of columns each: chunks of 2
// and 1) and to make the grid-stride loops go round.
//
// Tolerances. im2col and col2im are exact (col2im adds in the CPU's order),
// so what differs is the GEMMs' summation: cuBLAS and OpenBLAS block,
// vectorise and fuse (FMA) the inner products differently. Each output
// element is a sum of n products of inputs in [-1, 1]. Float32 sums of n
// such products taken in five orders (sequential with and without FMA, 8 and
// 16 FMA lanes, blocks of 32), a million random sums for each n from 2 to
// 144 and thousands up to n = 40000, were never more than 1.0 n eps apart
// (0.3 to 0.7 n eps for most n). So atol = 2 n eps, rtol 0, with n:
// - Output: the GEMM's inner size, (C / groups) * kh * kw;
// - Filter@GRAD: batch * Ho * Wo (a GEMM per image over Ho * Wo, the images
//   added one by one as on the CPU);
// - Input@GRAD: (M / groups) * kh * kw (a GEMM over M / groups per tap, the
//   taps added in the CPU's order).
// A case with both gradient outputs uses the larger n.
#include <algorithm>
#include <string>
#include <vector>

#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using Attrs = std::vector<std::pair<std::string, proto::Attr>>;
using testing::RandomTensor;

struct ConvSpec {
  Shape input;   // [N, C, H, W]
  Shape filter;  // [M, C / groups, kh, kw]
  std::vector<int64_t> strides = {1, 1};
  std::vector<int64_t> paddings = {0, 0};
  std::vector<int64_t> dilations = {1, 1};
  int64_t groups = 1;

  Attrs attrs() const {
    return {{"strides", IntsAttr("strides", strides)},
            {"paddings", IntsAttr("paddings", paddings)},
            {"dilations", IntsAttr("dilations", dilations)},
            {"groups", IntAttr("groups", groups)}};
  }
  int64_t out(int axis) const {
    const int64_t extent = dilations[axis] * (filter[2 + axis] - 1) + 1;
    return (input[2 + axis] + 2 * paddings[axis] - extent) / strides[axis] + 1;
  }
  Shape output() const { return {input[0], filter[0], out(0), out(1)}; }
  // Products per element of Output, Filter@GRAD and Input@GRAD (top of file).
  int64_t output_terms() const { return filter[1] * filter[2] * filter[3]; }
  int64_t filter_grad_terms() const { return input[0] * out(0) * out(1); }
  int64_t input_grad_terms() const { return filter[0] / groups * filter[2] * filter[3]; }
};

double Epsilon(DataType dtype) {
  return dtype == DataType::kFloat32 ? 1.1920928955078125e-7 : 2.220446049250313e-16;
}

double Tolerance(int64_t terms, DataType dtype) {
  return 2.0 * static_cast<double>(terms) * Epsilon(dtype);
}

// Which outputs a conv2d_grad case asks for, and whether Output@GRAD is given.
enum class Grads { kBoth, kInputOnly, kFilterOnly, kNoOutputGrad };

void AddForward(std::vector<Case>& cases, const ConvSpec& spec, DataType dtype, uint64_t seed) {
  cases.push_back({"conv2d",
                   {{"Input", RandomTensor(spec.input, seed, -1, 1, dtype)},
                    {"Filter", RandomTensor(spec.filter, seed + 1, -1, 1, dtype)}},
                   {"Output"},
                   Tolerance(spec.output_terms(), dtype),
                   0,
                   spec.attrs()});
}

void AddGrad(std::vector<Case>& cases, const ConvSpec& spec, DataType dtype, uint64_t seed,
             Grads grads = Grads::kBoth) {
  Case c{"conv2d_grad",
         {{"Input", RandomTensor(spec.input, seed, -1, 1, dtype)},
          {"Filter", RandomTensor(spec.filter, seed + 1, -1, 1, dtype)}},
         {},
         0,
         0,
         spec.attrs()};
  if (grads != Grads::kNoOutputGrad) {
    c.inputs["Output@GRAD"] = RandomTensor(spec.output(), seed + 2, -1, 1, dtype);
  }
  int64_t terms = 0;
  if (grads != Grads::kFilterOnly) {
    c.outputs.push_back("Input@GRAD");
    terms = std::max(terms, spec.input_grad_terms());
  }
  if (grads != Grads::kInputOnly) {
    c.outputs.push_back("Filter@GRAD");
    terms = std::max(terms, spec.filter_grad_terms());
  }
  if (grads != Grads::kNoOutputGrad) c.atol = Tolerance(terms, dtype);  // else zeros, exactly
  cases.push_back(std::move(c));
}

}  // namespace

std::vector<Case> ConvCases() {
  constexpr DataType kF32 = DataType::kFloat32;
  constexpr DataType kF64 = DataType::kFloat64;
  std::vector<ConvSpec> specs;
  // 3x3, padding 1.
  specs.push_back({{2, 3, 9, 9}, {4, 3, 3, 3}, {1, 1}, {1, 1}});
  // Strides, paddings and dilations unequal per axis, a non-square filter.
  specs.push_back({{3, 4, 11, 8}, {6, 4, 3, 2}, {2, 3}, {1, 2}, {2, 1}});
  // Two groups.
  specs.push_back({{2, 4, 7, 7}, {6, 2, 3, 3}, {2, 1}, {0, 1}, {1, 1}, 2});
  // Depthwise (more groups than images: the GEMMs batch over the groups).
  specs.push_back({{2, 8, 6, 5}, {8, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 8});
  // Depthwise with a channel multiplier of 2, strided and dilated.
  specs.push_back({{1, 3, 10, 10}, {6, 1, 2, 2}, {2, 2}, {0, 0}, {3, 3}, 3});
  // 1x1, stride 1, no padding: no im2col (the image is its own columns).
  specs.push_back({{4, 6, 5, 5}, {5, 6, 1, 1}});
  // The same with groups (as many as images).
  specs.push_back({{3, 6, 4, 7}, {6, 2, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 3});
  // 1x1 but strided and padded: im2col again.
  specs.push_back({{2, 3, 5, 6}, {4, 3, 1, 1}, {2, 2}, {1, 1}});
  // The filter covers the whole padded input: a 1x1 output.
  specs.push_back({{2, 2, 4, 4}, {3, 2, 6, 6}, {1, 1}, {1, 1}});
  // 3x3 at stride 1 with 16 channels in and out: the CPU takes Winograd's
  // path (ops/nn/winograd.h), forward and for Input@GRAD. Its rounding
  // stays within the bound above: 0.13-0.20 n eps in float32 from 8 to 256
  // channels on 7x7 and 14x14 images, where im2col's was 0.09-0.44 n eps.
  specs.push_back({{9, 16, 7, 6}, {16, 16, 3, 3}, {1, 1}, {1, 1}});

  std::vector<Case> cases;
  uint64_t seed = 3000;
  for (const ConvSpec& spec : specs) {
    for (DataType dtype : {kF32, kF64}) {
      AddForward(cases, spec, dtype, seed);
      AddGrad(cases, spec, dtype, seed + 10);
      seed += 20;
    }
  }
  // Each gradient output alone, and no Output@GRAD (zeros).
  AddGrad(cases, specs[1], kF32, 3500, Grads::kInputOnly);
  AddGrad(cases, specs[1], kF32, 3510, Grads::kFilterOnly);
  AddGrad(cases, specs[2], kF64, 3520, Grads::kFilterOnly);
  AddGrad(cases, specs[5], kF64, 3530, Grads::kInputOnly);
  AddGrad(cases, specs[5], kF32, 3540, Grads::kFilterOnly);
  AddGrad(cases, specs[0], kF32, 3550, Grads::kNoOutputGrad);
  // Several chunks of images (the scratch budget is 64 MiB): 16 * 9 * 200 *
  // 200 float32 columns are 23 MiB an image.
  const ConvSpec big{{3, 16, 200, 200}, {4, 16, 3, 3}, {1, 1}, {1, 1}};
  AddForward(cases, big, kF32, 3600);
  AddGrad(cases, big, kF32, 3610);
  AddGrad(cases, big, kF32, 3620, Grads::kInputOnly);  // at Input@GRAD's own tolerance
  return cases;
}

}  // namespace rill
