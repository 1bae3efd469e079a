// Tests of lookup_table and lookup_table_grad.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

AttrSetter Padding(int64_t idx) {
  return [idx](proto::OpDesc* op) { SetAttr(op, "padding_idx", idx); };
}

// W [4, 3] holding 0..11.
Tensor Table() { return MakeTensor<float>({4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}); }

TEST(LookupTableOpTest, CopiesTheSelectedRows) {
  auto out = RunOp({"lookup_table",
                    {{"W", {Table()}}, {"Ids", {MakeTensor<int64_t>({3, 1}, {2, 0, 2})}}},
                    {{"Out", 1}},
                    {}});
  ASSERT_EQ(out["Out"][0].shape(), (Shape{3, 3}));
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{6, 7, 8, 0, 1, 2, 6, 7, 8}));
}

TEST(LookupTableOpTest, RankOneIdsGiveRankTwoOutput) {
  auto out = RunOp({"lookup_table",
                    {{"W", {Table()}}, {"Ids", {MakeTensor<int64_t>({2}, {3, 1})}}},
                    {{"Out", 1}},
                    {}});
  ASSERT_EQ(out["Out"][0].shape(), (Shape{2, 3}));
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{9, 10, 11, 3, 4, 5}));
}

TEST(LookupTableOpTest, PaddingRowReadsAsZeros) {
  auto out = RunOp({"lookup_table",
                    {{"W", {Table()}}, {"Ids", {MakeTensor<int64_t>({3, 1}, {1, 3, 1})}}},
                    {{"Out", 1}},
                    Padding(1)});
  EXPECT_EQ(ToDoubles(out["Out"][0]), (std::vector<double>{0, 0, 0, 9, 10, 11, 0, 0, 0}));
}

TEST(LookupTableOpTest, GradKernelScatterAddsRows) {
  auto out = RunOp({"lookup_table_grad",
                    {{"W", {Table()}},
                     {"Ids", {MakeTensor<int64_t>({3, 1}, {2, 0, 2})}},
                     {"Out@GRAD", {MakeTensor<float>({3, 3}, {1, 2, 3, 10, 20, 30, 4, 5, 6})}}},
                    {{"W@GRAD", 1}},
                    {}});
  ASSERT_EQ(out["W@GRAD"][0].shape(), (Shape{4, 3}));
  EXPECT_EQ(ToDoubles(out["W@GRAD"][0]),
            (std::vector<double>{10, 20, 30, 0, 0, 0, 5, 7, 9, 0, 0, 0}));
}

TEST(LookupTableOpTest, GradientMatchesNumeric) {
  GradientCheck("lookup_table")
      .Input("W", RandomTensor({5, 3}, 1))
      .Input("Ids", MakeTensor<int64_t>({4, 1}, {1, 3, 1, 0}))
      .Output("Out")
      .Run();
  GradientCheck("lookup_table")
      .Input("W", RandomTensor({6, 4}, 2))
      .Input("Ids", MakeTensor<int64_t>({3}, {5, 5, 2}))
      .Output("Out")
      .Run();
  GradientCheck("lookup_table")
      .Input("W", RandomTensor({3, 2}, 3))
      .Input("Ids", MakeTensor<int64_t>({2, 2, 1}, {0, 2, 2, 1}))
      .Output("Out")
      .Attrs(Padding(2))
      .Run();
}

TEST(LookupTableOpTest, IdOutOfRangeNamesRowAndId) {
  const std::string msg = ErrorOf([] {
    RunOp({"lookup_table",
           {{"W", {Table()}}, {"Ids", {MakeTensor<int64_t>({3, 1}, {0, 1, 4})}}},
           {{"Out", 1}},
           {}});
  });
  EXPECT_NE(msg.find("Ids row 2 is 4"), std::string::npos) << msg;
  // -1 is not a padding id when padding_idx is unset.
  EXPECT_FALSE(ErrorOf([] {
                 RunOp({"lookup_table",
                        {{"W", {Table()}}, {"Ids", {MakeTensor<int64_t>({1}, {-1})}}},
                        {{"Out", 1}},
                        {}});
               }).empty());
}

TEST(LookupTableOpTest, BadShapesThrow) {
  // Ids must have a last dim of 1.
  EXPECT_THROW(RunOp({"lookup_table",
                      {{"W", {Table()}}, {"Ids", {MakeTensor<int64_t>({2, 2}, {0, 1, 2, 3})}}},
                      {{"Out", 1}},
                      {}}),
               Error);
  // W must be rank 2.
  EXPECT_THROW(RunOp({"lookup_table",
                      {{"W", {MakeTensor<float>({2, 2, 3}, {})}},
                       {"Ids", {MakeTensor<int64_t>({2, 1}, {0, 1})}}},
                      {{"Out", 1}},
                      {}}),
               Error);
  // Ids must be int64.
  EXPECT_THROW(RunOp({"lookup_table",
                      {{"W", {Table()}}, {"Ids", {MakeTensor<float>({2, 1}, {0, 1})}}},
                      {{"Out", 1}},
                      {}}),
               Error);
  // padding_idx must be a row of W.
  EXPECT_THROW(RunOp({"lookup_table",
                      {{"W", {Table()}}, {"Ids", {MakeTensor<int64_t>({1, 1}, {0})}}},
                      {{"Out", 1}},
                      Padding(4)}),
               Error);
}

}  // namespace
}  // namespace rill::testing

namespace rill::testing {
namespace {

TEST(LookupTableOpTest, SparseGradientIsTheLookedUpRowsAndDensifiesToTheDenseOne) {
  Tensor w = RandomTensor({5, 3}, 1);
  Tensor ids = MakeTensor<int64_t>({4, 1}, {3, 1, 3, 0});
  Tensor dy = RandomTensor({4, 3}, 2);
  for (const bool padded : {false, true}) {
    SCOPED_TRACE(padded ? "padding_idx 1" : "no padding");
    Scope scope;
    scope.Var("W")->mutable_tensor()->CopyFrom(w);
    scope.Var("Ids")->mutable_tensor()->CopyFrom(ids);
    scope.Var("dY")->mutable_tensor()->CopyFrom(dy);
    proto::OpDesc op;
    op.set_type("lookup_table_grad");
    SetInput(&op, "W", {"W"});
    SetInput(&op, "Ids", {"Ids"});
    SetInput(&op, "Out@GRAD", {"dY"});
    SetOutput(&op, "W@GRAD", {"dW"});
    SetAttr(&op, "padding_idx", padded ? 1 : -1);
    const OpSchema& schema = GetOpSchema("lookup_table_grad");
    SetAttr(&op, "is_sparse", true);
    KernelContext ctx(op, schema, &scope, Place::Cpu(), 1);
    (*schema.FindKernel(Place::Kind::kCpu))(ctx);
    EXPECT_FALSE(scope.GetTensor("dW").initialized());
    const SelectedRows& rows = scope.FindVar("dW")->selected_rows();
    EXPECT_EQ(rows.rows,
              padded ? (std::vector<int64_t>{3, 3, 0}) : (std::vector<int64_t>{3, 1, 3, 0}));
    EXPECT_EQ(rows.height, 5);
    EXPECT_TRUE(schema.OutputIsSparse(op, "W@GRAD"));
    // The dense gradient of the same lookup, computed by the dense kernel.
    SetAttr(&op, "is_sparse", false);
    SetOutput(&op, "W@GRAD", {"dense"});
    KernelContext dense_ctx(op, schema, &scope, Place::Cpu(), 1);
    (*schema.FindKernel(Place::Kind::kCpu))(dense_ctx);
    const auto want = ToDoubles(scope.GetTensor("dense"));
    const auto got = ToDoubles(rows.ToDense());
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_DOUBLE_EQ(got[i], want[i]) << i;
  }
}

}  // namespace
}  // namespace rill::testing
