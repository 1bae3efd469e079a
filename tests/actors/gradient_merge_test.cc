// GradientMerger on its own: the chunks of a merge sum the places' values in
// place order, and a merged sparse gradient leaves every place values of its own.
#include "actors/executor/gradient_merge.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "rill/scope.h"

namespace rill {
namespace {

// One merge of one member over `places` places (allreduce), its variables in `scope`s.
struct OneMemberMerge {
  explicit OneMemberMerge(int places) : places(places), merger(places, BuildStrategy{}, 1) {
    merge.node = 0;
    merge.order = 0;
    merge.members = {"g@GRAD"};
    for (int p = 0; p <= places; ++p) {
      scopes.push_back(std::make_unique<Scope>());
      state.vars.push_back(scopes.back()->Var("g@GRAD"));
    }
    state.sparse.assign(1, 0);
    state.compressed.assign(1, 0);
  }
  Variable& on(int place) { return *state.vars[static_cast<size_t>(place)]; }
  void Run() {
    merger.Prepare(merge, state, true);
    for (int p = 0; p < places; ++p) merger.ReduceChunk(merge, state, p);
  }

  int places;
  GradientMerger merger;
  GradientMerge merge;
  MergeState state;
  std::vector<std::unique_ptr<Scope>> scopes;
};

TEST(GradientMergerTest, DenseChunksSumEveryPlaceInPlaceOrder) {
  OneMemberMerge m(3);
  for (int p = 0; p < 3; ++p) {
    float* g = m.on(p).mutable_tensor()->Allocate<float>({5});
    for (int i = 0; i < 5; ++i) g[i] = static_cast<float>(p * 10 + i);
  }
  m.Run();
  for (int p = 0; p < 3; ++p) {
    const float* g = m.on(p).tensor().data<float>();
    for (int i = 0; i < 5; ++i)
      EXPECT_EQ(g[i], 30.0f + 3.0f * i) << "place " << p << " [" << i << "]";
  }
}

TEST(GradientMergerTest, AMergedSparseGradientGivesEveryPlaceValuesOfItsOwn) {
  OneMemberMerge m(2);
  for (int p = 0; p < 2; ++p) {
    SelectedRows& rows = *m.on(p).mutable_selected_rows();
    rows.height = 4;
    rows.rows = {p, 3};
    float* v = rows.value.Allocate<float>({2, 2});
    for (int i = 0; i < 4; ++i) v[i] = static_cast<float>(p + 1);
  }
  m.Run();
  const SelectedRows& first = m.on(0).selected_rows();
  const SelectedRows& second = m.on(1).selected_rows();
  ASSERT_EQ(first.rows, second.rows);
  EXPECT_EQ(first.rows, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_NE(first.value.data<float>(), second.value.data<float>())
      << "the places share one buffer: an in-place update on one changes the other";
  // An op updating place 1's gradient in place leaves place 0's as merged.
  m.on(1).mutable_selected_rows()->value.mutable_data<float>()[0] = -100.0f;
  EXPECT_EQ(first.value.data<float>()[0], 1.0f);
  EXPECT_EQ(first.value.data<float>()[4], 3.0f);  // row 3: 1 + 2
}

}  // namespace
}  // namespace rill
