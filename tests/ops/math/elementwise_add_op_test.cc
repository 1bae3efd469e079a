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
// follows too: rows cut into chunks of 1024, each chunk summed in eight lanes
// (whole groups of eight; the rest from 0, then the lanes in order), the
// partials added in order from 0. The data is such that a plain sequential
// sum, and sequential chunks, give other bits, so the order is what is checked.
TEST(ElementwiseAddOpTest, BiasGradientOfLongRowsSumsInChunksOfLanes) {
  constexpr int64_t kPre = 3, kN = 2, kPost = 2100;  // chunks of 1024, 1024 and 52
  const Tensor dout = RandomTensor({kPre, kN, kPost}, 7, -1, 1, DataType::kFloat32);
  auto out = RunOp({"elementwise_add_grad",
                    {{"X", {RandomTensor({kPre, kN, kPost}, 8, -1, 1, DataType::kFloat32)}},
                     {"Y", {RandomTensor({kN}, 9, -1, 1, DataType::kFloat32)}},
                     {"Out@GRAD", {dout}}},
                    {{"Y@GRAD", 1}},
                    [](proto::OpDesc* op) { SetAttr(op, "axis", 1); }});
  const float* d = dout.data<float>();
  bool lanes_matter = false, chunks_matter = false;
  for (int64_t j = 0; j < kN; ++j) {
    float lane_chunked = 0, chunked = 0, sequential = 0;
    for (int64_t i = 0; i < kPre; ++i) {
      const float* row = d + (i * kN + j) * kPost;
      for (int64_t first = 0; first < kPost; first += 1024) {
        const int64_t end = std::min(kPost, first + 1024);
        float lanes[8] = {}, rest = 0, partial = 0;
        int64_t k = first;
        for (; k + 8 <= end; k += 8) {
          for (int u = 0; u < 8; ++u) lanes[u] += row[k + u];
        }
        for (; k < end; ++k) rest += row[k];
        for (float lane : lanes) rest += lane;
        lane_chunked += rest;
        for (k = first; k < end; ++k) partial += row[k];
        chunked += partial;
      }
      for (int64_t k = 0; k < kPost; ++k) sequential += row[k];
    }
    EXPECT_EQ(out["Y@GRAD"][0].data<float>()[j], lane_chunked) << j;
    lanes_matter = lanes_matter || lane_chunked != chunked;
    chunks_matter = chunks_matter || lane_chunked != sequential;
  }
  EXPECT_TRUE(lanes_matter && chunks_matter) << "the data does not tell the orders apart";
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
