// Tests of conv2d and conv2d_grad against direct convolution loops and central differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "rill/error.h"
#include "rill/executor.h"
#include "rill/parallel_for.h"
#include "rill/scope.h"
#include "tests/testing/gradient_check.h"
#include "tests/testing/helper_thread.h"
#include "tests/testing/training.h"

namespace rill::testing {
namespace {

struct ConvCase {
  std::string name;
  Shape input;   // [N, C, H, W]
  Shape filter;  // [M, C / groups, kh, kw]
  std::vector<int64_t> strides{1, 1};
  std::vector<int64_t> paddings{0, 0};
  std::vector<int64_t> dilations{1, 1};
  int groups = 1;
};

AttrSetter ConvAttrs(const ConvCase& c) {
  return [c](proto::OpDesc* op) {
    SetAttr(op, "strides", c.strides);
    SetAttr(op, "paddings", c.paddings);
    SetAttr(op, "dilations", c.dilations);
    SetAttr(op, "groups", c.groups);
  };
}

// Sizes of the direct loops.
struct Dims {
  int64_t n, c, h, w, m, cg, kh, kw, oh, ow, mg;
};

Dims DimsOf(const ConvCase& c) {
  Dims d;
  d.n = c.input[0];
  d.c = c.input[1];
  d.h = c.input[2];
  d.w = c.input[3];
  d.m = c.filter[0];
  d.cg = c.filter[1];
  d.kh = c.filter[2];
  d.kw = c.filter[3];
  d.oh = (d.h + 2 * c.paddings[0] - c.dilations[0] * (d.kh - 1) - 1) / c.strides[0] + 1;
  d.ow = (d.w + 2 * c.paddings[1] - c.dilations[1] * (d.kw - 1) - 1) / c.strides[1] + 1;
  d.mg = d.m / c.groups;
  return d;
}

// Calls fn(input index, filter index, output index) for every product term
// of the convolution: the 7 nested loops of the definition.
template <class Fn>
void ForEachTerm(const ConvCase& c, Fn fn) {
  const Dims d = DimsOf(c);
  for (int64_t n = 0; n < d.n; ++n) {
    for (int64_t m = 0; m < d.m; ++m) {
      const int64_t group = m / d.mg;
      for (int64_t oy = 0; oy < d.oh; ++oy) {
        for (int64_t ox = 0; ox < d.ow; ++ox) {
          for (int64_t ci = 0; ci < d.cg; ++ci) {
            for (int64_t i = 0; i < d.kh; ++i) {
              for (int64_t j = 0; j < d.kw; ++j) {
                const int64_t y = oy * c.strides[0] - c.paddings[0] + i * c.dilations[0];
                const int64_t x = ox * c.strides[1] - c.paddings[1] + j * c.dilations[1];
                if (y < 0 || y >= d.h || x < 0 || x >= d.w) continue;
                const int64_t channel = group * d.cg + ci;
                fn(((n * d.c + channel) * d.h + y) * d.w + x,
                   ((m * d.cg + ci) * d.kh + i) * d.kw + j,
                   ((n * d.m + m) * d.oh + oy) * d.ow + ox);
              }
            }
          }
        }
      }
    }
  }
}

std::vector<double> DirectConv(const ConvCase& c, const std::vector<double>& x,
                               const std::vector<double>& w) {
  const Dims d = DimsOf(c);
  std::vector<double> out(static_cast<size_t>(d.n * d.m * d.oh * d.ow), 0.0);
  ForEachTerm(c, [&](int64_t xi, int64_t wi, int64_t oi) { out[oi] += x[xi] * w[wi]; });
  return out;
}

void ExpectAllNear(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

std::vector<ConvCase> ForwardCases() {
  std::vector<ConvCase> cases;
  cases.push_back({"basic", {1, 1, 5, 5}, {1, 1, 3, 3}});
  cases.push_back({"pad1", {2, 3, 6, 7}, {4, 3, 3, 3}, {1, 1}, {1, 1}});
  cases.push_back({"stride2_nonsquare", {2, 3, 7, 6}, {2, 3, 3, 2}, {2, 2}, {1, 1}});
  cases.push_back({"dilation2", {1, 2, 7, 7}, {3, 2, 3, 3}, {1, 1}, {2, 2}, {2, 2}});
  cases.push_back({"groups2", {2, 4, 5, 5}, {6, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2});
  cases.push_back({"pointwise", {2, 4, 5, 6}, {3, 4, 1, 1}});
  cases.push_back({"pointwise_groups", {2, 4, 5, 6}, {4, 2, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 2});
  cases.push_back({"pointwise_stride2", {1, 3, 5, 6}, {2, 3, 1, 1}, {2, 2}});
  cases.push_back({"mixed", {1, 2, 8, 7}, {2, 2, 2, 3}, {1, 2}, {0, 1}, {2, 1}});
  cases.push_back({"window_is_input", {1, 2, 3, 3}, {2, 2, 3, 3}});
  cases.push_back({"pad_exceeds_half", {1, 1, 2, 3}, {1, 1, 3, 3}, {1, 1}, {2, 2}});
  cases.push_back({"groups4_stride2", {1, 8, 6, 6}, {4, 2, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 4});
  cases.push_back({"mnist_like", {2, 1, 28, 28}, {4, 1, 5, 5}, {1, 1}, {2, 2}});
  cases.push_back({"mnist_like2", {2, 6, 14, 14}, {5, 6, 5, 5}, {1, 1}, {2, 2}});
  // Stride 1 with output rows as wide as the input's: im2col's row-block copy.
  cases.push_back({"same_width_dilated_rows", {1, 2, 7, 6}, {3, 2, 3, 3}, {1, 1}, {2, 1}, {2, 1}});
  cases.push_back({"same_width_tall_pad", {1, 1, 3, 4}, {2, 1, 5, 3}, {1, 1}, {3, 1}});
  cases.push_back({"same_width_column", {2, 2, 5, 4}, {3, 2, 3, 1}, {1, 1}, {1, 0}});
  // 3x3 at stride 1 with 8 channels or more: Winograd's path (winograd.h).
  cases.push_back({"winograd_pad1", {2, 8, 7, 7}, {9, 8, 3, 3}, {1, 1}, {1, 1}});
  cases.push_back({"winograd_pad0_odd", {2, 8, 9, 6}, {8, 8, 3, 3}});
  cases.push_back({"winograd_pad2", {1, 9, 5, 4}, {8, 9, 3, 3}, {1, 1}, {2, 2}});
  cases.push_back({"winograd_mixed_pads", {2, 8, 6, 7}, {8, 8, 3, 3}, {1, 1}, {0, 2}});
  cases.push_back({"winograd_one_pixel", {2, 8, 1, 1}, {8, 8, 3, 3}, {1, 1}, {1, 1}});
  cases.push_back({"winograd_chunks", {40, 8, 8, 8}, {8, 8, 3, 3}, {1, 1}, {1, 1}});
  cases.push_back({"winograd_large_image", {3, 8, 40, 37}, {8, 8, 3, 3}, {1, 1}, {1, 1}});
  // 5x5 at stride 1: F(2x2, 5x5).
  cases.push_back({"winograd5_pad2", {2, 8, 14, 14}, {9, 8, 5, 5}, {1, 1}, {2, 2}});
  cases.push_back({"winograd5_pad0_odd", {2, 8, 9, 7}, {8, 8, 5, 5}});
  cases.push_back({"winograd5_mixed_pads", {1, 9, 3, 4}, {8, 9, 5, 5}, {1, 1}, {4, 1}});
  cases.push_back({"winograd5_chunks", {20, 8, 6, 6}, {8, 8, 5, 5}, {1, 1}, {2, 2}});
  // Chunks of 8 images with rows of 8 pixels and a tail of 3: the gather's
  // 8 x 8 transposes and its element-wise rest.
  cases.push_back({"winograd5_chunks_wide", {16, 8, 5, 11}, {8, 8, 5, 5}, {1, 1}, {2, 2}});
  return cases;
}

TEST(Conv2dOpTest, SmallExampleByHand) {
  // 1..9 in a 3x3 image, a 2x2 kernel of [[1, 2], [3, 4]].
  auto out = RunOp({"conv2d",
                    {{"Input", {MakeTensor<double>({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})}},
                     {"Filter", {MakeTensor<double>({1, 1, 2, 2}, {1, 2, 3, 4})}}},
                    {{"Output", 1}},
                    {}});
  EXPECT_EQ(out["Output"][0].shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(ToDoubles(out["Output"][0]), (std::vector<double>{37, 47, 67, 77}));
}

TEST(Conv2dOpTest, ForwardMatchesDirectConvolution) {
  uint64_t seed = 1;
  for (const ConvCase& c : ForwardCases()) {
    SCOPED_TRACE(c.name);
    for (DataType dtype : {DataType::kFloat64, DataType::kFloat32}) {
      const Tensor x = RandomTensor(c.input, seed++, -1, 1, dtype);
      const Tensor w = RandomTensor(c.filter, seed++, -1, 1, dtype);
      auto out =
          RunOp({"conv2d", {{"Input", {x}}, {"Filter", {w}}}, {{"Output", 1}}, ConvAttrs(c)});
      const Dims d = DimsOf(c);
      const Tensor& y = out["Output"][0];
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_EQ(y.shape(), (Shape{d.n, d.m, d.oh, d.ow}));
      ExpectAllNear(ToDoubles(y), DirectConv(c, ToDoubles(x), ToDoubles(w)),
                    dtype == DataType::kFloat64 ? 1e-12 : 1e-4);
    }
  }
}

std::vector<ConvCase> GradientCases() {
  std::vector<ConvCase> cases;
  cases.push_back({"stride1_pad0", {2, 2, 4, 4}, {3, 2, 3, 3}});
  cases.push_back({"stride2_pad1", {1, 2, 5, 5}, {2, 2, 3, 3}, {2, 2}, {1, 1}});
  cases.push_back({"dilation2", {1, 2, 6, 6}, {2, 2, 2, 2}, {1, 1}, {1, 1}, {2, 2}});
  cases.push_back({"groups2", {2, 4, 4, 4}, {4, 2, 2, 2}, {1, 1}, {1, 1}, {1, 1}, 2});
  cases.push_back({"nonsquare", {1, 2, 5, 6}, {2, 2, 2, 3}, {1, 2}, {1, 0}});
  cases.push_back({"pointwise", {2, 3, 3, 3}, {2, 3, 1, 1}});
  cases.push_back({"same_width", {2, 3, 5, 6}, {2, 3, 3, 3}, {1, 1}, {1, 1}});
  cases.push_back({"same_width_tall_pad", {1, 2, 3, 4}, {2, 2, 5, 3}, {1, 1}, {3, 1}});
  cases.push_back({"winograd_pad1", {2, 8, 5, 4}, {8, 8, 3, 3}, {1, 1}, {1, 1}});
  cases.push_back({"winograd_pad0", {1, 8, 5, 5}, {9, 8, 3, 3}});
  cases.push_back({"winograd_pad2", {1, 8, 3, 4}, {9, 8, 3, 3}, {1, 1}, {2, 1}});
  cases.push_back({"winograd5_pad2", {2, 8, 5, 4}, {8, 8, 5, 5}, {1, 1}, {2, 2}});
  cases.push_back({"winograd5_pad1", {1, 8, 6, 6}, {9, 8, 5, 5}, {1, 1}, {1, 1}});
  cases.push_back({"winograd5_pad3", {1, 8, 3, 4}, {8, 8, 5, 5}, {1, 1}, {3, 2}});
  return cases;
}

TEST(Conv2dOpTest, GradientMatchesNumeric) {
  uint64_t seed = 100;
  for (const ConvCase& c : GradientCases()) {
    SCOPED_TRACE(c.name);
    const Tensor x = RandomTensor(c.input, seed++);
    const Tensor w = RandomTensor(c.filter, seed++);
    GradientCheck("conv2d")
        .Input("Input", x)
        .Input("Filter", w)
        .Output("Output")
        .Attrs(ConvAttrs(c))
        .Run();
  }
}

// Runs conv2d_grad with only the given gradient outputs bound.
std::map<std::string, std::vector<Tensor>> RunConvGrad(const ConvCase& c, const Tensor& x,
                                                       const Tensor& w, const Tensor& dy,
                                                       std::vector<std::string> outputs) {
  OpRun run{
      "conv2d_grad", {{"Input", {x}}, {"Filter", {w}}, {"Output@GRAD", {dy}}}, {}, ConvAttrs(c)};
  for (const auto& o : outputs) run.outputs.push_back({o, 1});
  return RunOp(run);
}

TEST(Conv2dOpTest, EachGradientAloneMatchesDirectLoops) {
  uint64_t seed = 200;
  for (const ConvCase& c : GradientCases()) {
    SCOPED_TRACE(c.name);
    const Dims d = DimsOf(c);
    const Tensor x = RandomTensor(c.input, seed++);
    const Tensor w = RandomTensor(c.filter, seed++);
    const Tensor dy = RandomTensor({d.n, d.m, d.oh, d.ow}, seed++);
    const std::vector<double> xs = ToDoubles(x), ws = ToDoubles(w), dys = ToDoubles(dy);
    std::vector<double> dx(xs.size(), 0.0), dw(ws.size(), 0.0);
    ForEachTerm(c, [&](int64_t xi, int64_t wi, int64_t oi) {
      dx[xi] += dys[oi] * ws[wi];
      dw[wi] += dys[oi] * xs[xi];
    });
    auto only_input = RunConvGrad(c, x, w, dy, {"Input@GRAD"});
    ExpectAllNear(ToDoubles(only_input["Input@GRAD"][0]), dx, 1e-12);
    auto only_filter = RunConvGrad(c, x, w, dy, {"Filter@GRAD"});
    ExpectAllNear(ToDoubles(only_filter["Filter@GRAD"][0]), dw, 1e-12);
    auto both = RunConvGrad(c, x, w, dy, {"Input@GRAD", "Filter@GRAD"});
    ExpectAllNear(ToDoubles(both["Input@GRAD"][0]), dx, 1e-12);
    ExpectAllNear(ToDoubles(both["Filter@GRAD"][0]), dw, 1e-12);
  }
}

// Filter@GRAD over enough images to be cut into parts (Winograd's runs of
// chunks, im2col's runs of images), each summed into values of its own and
// added in order: against the direct loops, and the same bits whether a
// second thread takes parts (as an executor's idle thread does) or not.
TEST(Conv2dOpTest, FilterGradientInPartsMatchesDirectLoopsOnAnyThreads) {
  const std::vector<ConvCase> cases = {
      {"winograd3_five_chunks", {40, 8, 8, 8}, {8, 8, 3, 3}, {1, 1}, {1, 1}},
      {"winograd5_five_chunks", {40, 8, 14, 14}, {8, 8, 5, 5}, {1, 1}, {2, 2}},
      {"im2col_four_runs", {72, 2, 12, 12}, {4, 2, 5, 5}, {1, 1}, {2, 2}},
  };
  IdleHelpers helpers([] {});
  uint64_t seed = 300;
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Dims d = DimsOf(c);
    const Shape out_shape{d.n, d.m, d.oh, d.ow};
    const Tensor x = RandomTensor(c.input, seed++);
    const Tensor w = RandomTensor(c.filter, seed++);
    const Tensor dy = RandomTensor(out_shape, seed++);
    const std::vector<double> xs = ToDoubles(x), dys = ToDoubles(dy);
    std::vector<double> dw(static_cast<size_t>(NumElements(c.filter)), 0.0);
    ForEachTerm(c, [&](int64_t xi, int64_t wi, int64_t oi) { dw[wi] += dys[oi] * xs[xi]; });
    // Sums of up to 63k products of values near 1: float64 rounding near 1e-11.
    ExpectAllNear(ToDoubles(RunConvGrad(c, x, w, dy, {"Filter@GRAD"})["Filter@GRAD"][0]), dw,
                  1e-10);

    const Tensor x32 = RandomTensor(c.input, seed++, -1, 1, DataType::kFloat32);
    const Tensor w32 = RandomTensor(c.filter, seed++, -1, 1, DataType::kFloat32);
    const Tensor dy32 = RandomTensor(out_shape, seed++, -1, 1, DataType::kFloat32);
    const Tensor alone = RunConvGrad(c, x32, w32, dy32, {"Filter@GRAD"})["Filter@GRAD"][0];
    HelperThread helper(helpers);
    ScopedParallelHelpers lend(&helpers);
    for (int rep = 0; rep < 5; ++rep) {
      for (const auto& outputs : {std::vector<std::string>{"Filter@GRAD"},
                                  std::vector<std::string>{"Input@GRAD", "Filter@GRAD"}}) {
        const auto got = RunConvGrad(c, x32, w32, dy32, outputs);
        EXPECT_TRUE(BitEqual(got.at("Filter@GRAD")[0], alone)) << "repetition " << rep;
      }
    }
  }
}

TEST(Conv2dOpTest, MissingOutputGradientGivesZeros) {
  const ConvCase c{"zero", {1, 2, 4, 4}, {2, 2, 3, 3}, {1, 1}, {1, 1}};
  auto out =
      RunOp({"conv2d_grad",
             {{"Input", {RandomTensor(c.input, 1)}}, {"Filter", {RandomTensor(c.filter, 2)}}},
             {{"Input@GRAD", 1}, {"Filter@GRAD", 1}},
             ConvAttrs(c)});
  EXPECT_EQ(ToDoubles(out["Input@GRAD"][0]), std::vector<double>(32, 0.0));
  EXPECT_EQ(ToDoubles(out["Filter@GRAD"][0]), std::vector<double>(36, 0.0));
}

TEST(Conv2dOpTest, ConcurrentRunsOnThreadsAgree) {
  // Different sizes on each thread: the column scratch must not be shared.
  std::vector<ConvCase> cases;
  for (const ConvCase& c : ForwardCases()) {
    if (c.name == "mnist_like" || c.name == "mnist_like2") cases.push_back(c);
  }
  ASSERT_EQ(cases.size(), 2u);
  std::vector<std::vector<double>> want;
  std::vector<std::pair<Tensor, Tensor>> inputs;
  for (size_t k = 0; k < cases.size(); ++k) {
    inputs.push_back({RandomTensor(cases[k].input, 10 + k), RandomTensor(cases[k].filter, 20 + k)});
    want.push_back(DirectConv(cases[k], ToDoubles(inputs[k].first), ToDoubles(inputs[k].second)));
  }
  std::vector<double> worst(cases.size(), 0.0);  // largest error over all repetitions
  std::vector<std::thread> threads;
  for (size_t k = 0; k < cases.size(); ++k) {
    threads.emplace_back([&, k] {
      for (int rep = 0; rep < 20; ++rep) {
        auto out = RunOp({"conv2d",
                          {{"Input", {inputs[k].first}}, {"Filter", {inputs[k].second}}},
                          {{"Output", 1}},
                          ConvAttrs(cases[k])});
        const std::vector<double> got = ToDoubles(out["Output"][0]);
        if (got.size() != want[k].size()) {
          worst[k] = 1e9;
          return;
        }
        for (size_t i = 0; i < got.size(); ++i) {
          worst[k] = std::max(worst[k], std::abs(got[i] - want[k][i]));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (size_t k = 0; k < cases.size(); ++k) EXPECT_LT(worst[k], 1e-12) << cases[k].name;
}

// Runs conv2d on inputs of the given shapes; the caller expects it to throw.
void RunConvShapes(const Shape& input, const Shape& filter, const ConvCase& attrs,
                   DataType filter_type = DataType::kFloat64) {
  RunOp({"conv2d",
         {{"Input", {RandomTensor(input, 1)}},
          {"Filter", {RandomTensor(filter, 2, -1, 1, filter_type)}}},
         {{"Output", 1}},
         ConvAttrs(attrs)});
}

TEST(Conv2dOpTest, RejectsBadShapesAndAttributes) {
  const ConvCase plain{"plain", {}, {}};
  // Channel mismatch: Input has 3 channels, Filter expects 2.
  EXPECT_THROW(RunConvShapes({1, 3, 5, 5}, {4, 2, 3, 3}, plain), Error);
  // Kernel larger than the padded input.
  EXPECT_THROW(RunConvShapes({1, 2, 3, 3}, {4, 2, 5, 5}, plain), Error);
  ConvCase pad1 = plain;
  pad1.paddings = {1, 0};
  EXPECT_THROW(RunConvShapes({1, 2, 3, 3}, {4, 2, 5, 4}, pad1), Error);
  // Dilation makes a 3x3 kernel span 5 rows.
  ConvCase dilated = plain;
  dilated.dilations = {2, 2};
  EXPECT_THROW(RunConvShapes({1, 2, 4, 4}, {4, 2, 3, 3}, dilated), Error);
  // Groups must divide the output channels and match the input channels.
  ConvCase groups2 = plain;
  groups2.groups = 2;
  EXPECT_THROW(RunConvShapes({1, 4, 5, 5}, {3, 2, 3, 3}, groups2), Error);
  EXPECT_THROW(RunConvShapes({1, 2, 5, 5}, {4, 2, 3, 3}, groups2), Error);
  // Wrong ranks.
  EXPECT_THROW(RunConvShapes({2, 5, 5}, {4, 2, 3, 3}, plain), Error);
  EXPECT_THROW(RunConvShapes({1, 2, 5, 5}, {4, 2, 3}, plain), Error);
  // Filter type differs from Input's.
  EXPECT_THROW(RunConvShapes({1, 2, 5, 5}, {4, 2, 3, 3}, plain, DataType::kFloat32), Error);
  // Out-of-range attributes.
  ConvCase bad = plain;
  bad.strides = {0, 1};
  EXPECT_THROW(RunConvShapes({1, 2, 5, 5}, {4, 2, 3, 3}, bad), Error);
  bad = plain;
  bad.paddings = {-1, 0};
  EXPECT_THROW(RunConvShapes({1, 2, 5, 5}, {4, 2, 3, 3}, bad), Error);
  bad = plain;
  bad.dilations = {1, 1, 1};
  EXPECT_THROW(RunConvShapes({1, 2, 5, 5}, {4, 2, 3, 3}, bad), Error);
  bad = plain;
  bad.groups = 0;
  EXPECT_THROW(RunConvShapes({1, 2, 5, 5}, {4, 2, 3, 3}, bad), Error);
  // A good call still works after all that.
  EXPECT_NO_THROW(RunConvShapes({1, 2, 5, 5}, {4, 2, 3, 3}, plain));
}

// Declares a variable in block 0.
void Declare(proto::BlockDesc* block, const std::string& name, const Shape& shape) {
  auto* v = block->add_vars();
  v->set_name(name);
  v->set_kind(proto::DENSE_TENSOR);
  v->set_dtype(ToProto(DataType::kFloat64));
  for (auto d : shape) v->add_shape(d);
}

TEST(Conv2dOpTest, KernelChecksShapesKnownOnlyAtRunTime) {
  // Input's batch and plane are unknown when the program is validated.
  proto::ProgramDesc program;
  auto* block = program.add_blocks();
  block->set_idx(0);
  block->set_parent_idx(-1);
  Declare(block, "x", {-1, 2, -1, -1});
  Declare(block, "w", {3, 2, 3, 3});
  Declare(block, "y", {-1, 3, -1, -1});
  auto* op = block->add_ops();
  op->set_type("conv2d");
  SetInput(op, "Input", {"x"});
  SetInput(op, "Filter", {"w"});
  SetOutput(op, "Output", {"y"});
  Executor exe;
  Scope scope;
  const Tensor w = RandomTensor({3, 2, 3, 3}, 2);
  auto ok = exe.Run(program, &scope, {{"x", RandomTensor({2, 2, 4, 5}, 1)}, {"w", w}}, {"y"});
  EXPECT_EQ(ok[0].shape(), (Shape{2, 3, 2, 3}));
  EXPECT_THROW(exe.Run(program, &scope, {{"x", RandomTensor({1, 2, 2, 5}, 3)}, {"w", w}}, {"y"}),
               Error);
}

}  // namespace
}  // namespace rill::testing
