// Tests of elementwise_add and its gradient (broadcast cases in elementwise_test_util.h).
#include "tests/ops/math/elementwise_test_util.h"

namespace rill::testing {
namespace {

TEST(ElementwiseAddOpTest, AddsABiasToEveryRowFloat32) {
  auto out = RunOp({"elementwise_add",
                    {{"X", {MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6})}},
                     {"Y", {MakeTensor<float>({3}, {10, 20, 30})}}},
                    {{"Out", 1}},
                    {}});
  EXPECT_EQ(out["Out"][0].dtype(), DataType::kFloat32);
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{11, 22, 33, 14, 25, 36}));
}

TEST(ElementwiseAddOpTest, MatchesReferenceOnEveryBroadcast) {
  ExpectForwardMatchesReference("elementwise_add", [](double x, double y) { return x + y; });
}

TEST(ElementwiseAddOpTest, GradientMatchesNumeric) {
  ExpectGradientsMatchNumeric("elementwise_add");
}

TEST(ElementwiseAddOpTest, BiasGradientSumsOverRows) {
  auto out = RunOp({"elementwise_add_grad",
                    {{"X", {MakeTensor<float>({2, 2}, {0, 0, 0, 0})}},
                     {"Y", {MakeTensor<float>({2}, {0, 0})}},
                     {"Out@GRAD", {MakeTensor<float>({2, 2}, {1, 2, 3, 4})}}},
                    {{"X@GRAD", 1}, {"Y@GRAD", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(ToDoubles(out["Y@GRAD"][0]), (std::vector<double>{4, 6}));
}

// Y@GRAD sums in ops/math/broadcast_sum.h's order, which the CUDA kernel
// follows too: rows cut into chunks of 1024, each chunk summed from 0, the
// partials added in order. The data is such that the plain sequential sum
// gives other bits, so the order is what is checked.
TEST(ElementwiseAddOpTest, BiasGradientOfLongRowsSumsInChunks) {
  constexpr int64_t kPre = 3, kN = 2, kPost = 2100;
  const Tensor dout = RandomTensor({kPre, kN, kPost}, 7, -1, 1, DataType::kFloat32);
  auto out = RunOp({"elementwise_add_grad",
                    {{"X", {RandomTensor({kPre, kN, kPost}, 8, -1, 1, DataType::kFloat32)}},
                     {"Y", {RandomTensor({kN}, 9, -1, 1, DataType::kFloat32)}},
                     {"Out@GRAD", {dout}}},
                    {{"Y@GRAD", 1}},
                    [](proto::OpDesc* op) { SetAttr(op, "axis", 1); }});
  const float* d = dout.data<float>();
  bool orders_differ = false;
  for (int64_t j = 0; j < kN; ++j) {
    float chunked = 0, sequential = 0;
    for (int64_t i = 0; i < kPre; ++i) {
      const float* row = d + (i * kN + j) * kPost;
      for (int64_t first = 0; first < kPost; first += 1024) {
        float partial = 0;
        for (int64_t k = first; k < std::min(kPost, first + 1024); ++k) partial += row[k];
        chunked += partial;
      }
      for (int64_t k = 0; k < kPost; ++k) sequential += row[k];
    }
    EXPECT_EQ(out["Y@GRAD"][0].data<float>()[j], chunked) << j;
    orders_differ = orders_differ || chunked != sequential;
  }
  EXPECT_TRUE(orders_differ) << "the data does not tell the two orders apart";
}

TEST(ElementwiseAddOpTest, MissingOutputGradientMeansZero) {
  auto out = RunOp({"elementwise_add_grad",
                    {{"X", {MakeTensor<float>({2}, {1, 2})}}, {"Y", {MakeTensor<float>({1}, {3})}}},
                    {{"X@GRAD", 1}, {"Y@GRAD", 1}},
                    {}});
  EXPECT_EQ(ToDoubles(out["X@GRAD"][0]), (std::vector<double>{0, 0}));
  EXPECT_EQ(ToDoubles(out["Y@GRAD"][0]), (std::vector<double>{0}));
}

TEST(ElementwiseAddOpTest, MismatchedShapesThrow) {
  ExpectMismatchedShapesThrow("elementwise_add");
}

TEST(ElementwiseAddOpTest, MixedTypesThrow) {
  EXPECT_THROW(
      RunOp({"elementwise_add",
             {{"X", {MakeTensor<float>({2}, {1, 2})}}, {"Y", {MakeTensor<double>({2}, {1, 2})}}},
             {{"Out", 1}},
             {}}),
      Error);
}

}  // namespace
}  // namespace rill::testing
