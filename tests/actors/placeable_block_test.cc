// A placeable block computes what its ops compute inline: an MLP whose
// optimizer is placeable trains to the same parameters, bit for bit, as the
// same MLP without one — on the sequential executor and on the actor
// executor with one and two places (both merge strategies: the gradients are
// merged before the block runs).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/op_desc.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "rill/program_io.h"
#include "rill/validate.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using testing::RandomTensor;

struct Programs {
  Program main, startup;
  std::string loss;
};

// An MLP trained with Adam and a decaying learning rate (a step counter in
// the program), with or without a placeable optimizer block.
void BuildMlp(bool placeable, Programs* p) {
  Builder b(&p->main, &p->startup, 5);
  Var x = b.Data("x", {-1, 10}, DataType::kFloat64);
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var h = b.Fc(x, 12, Activation::kRelu);
  Var loss = b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(h, 4), label));
  Adam adam(0.01f);
  adam.set_placeable(placeable).set_learning_rate_schedule([](Builder& b, const Var& lr) {
    Var step = b.Persistable("step", {1}, 0);
    b.AppendOpTo("scale", {{"X", {step}}}, {{"Out", {step}}},
                 [](proto::OpDesc* op) { SetAttr(op, "bias", 1.0f); });
    return b.Div(lr, b.Scale(step, 0.5f, 1.0f));  // lr / (1 + step / 2)
  });
  adam.Minimize(b, loss);
  p->loss = loss.name;
}

FeedList Feeds(int step, int64_t batch) {
  Tensor y(DataType::kInt64, {batch, 1});
  for (int64_t i = 0; i < batch; ++i) y.mutable_data<int64_t>()[i] = (i * 3 + step) % 4;
  return {{"x", RandomTensor({batch, 10}, 300 + step)}, {"label", y}};
}

struct Trained {
  std::vector<Tensor> params;
  std::vector<double> losses;
};

// places 0: the sequential Executor.
Trained Train(bool placeable, int places, ReduceStrategy reduce = ReduceStrategy::kAllReduce) {
  Programs p;
  BuildMlp(placeable, &p);
  Scope scope;
  Executor exe;
  exe.Run(p.startup.desc(), &scope);
  Trained t;
  if (places == 0) {
    auto step = exe.Prepare(p.main.desc(), &scope);
    for (int s = 0; s < 4; ++s) {
      t.losses.push_back(exe.Run(*step, Feeds(s, 8), {p.loss})[0].GetAsDouble(0));
    }
  } else {
    ExecutionStrategy strategy;
    strategy.num_threads = 2;
    BuildStrategy build;
    build.reduce = reduce;
    ParallelExecutor actors(
        p.main.desc(), &scope,
        {.places = std::vector<Place>(places, Place::Cpu()), .strategy = strategy, .build = build});
    for (int s = 0; s < 4; ++s) {
      t.losses.push_back(actors.Run(Feeds(s, 8), {p.loss})[0].GetAsDouble(0));
    }
  }
  for (const auto& var : p.main.desc().blocks(0).vars()) {
    if (var.parameter() || var.name() == "step") {
      t.params.push_back(scope.GetTensor(var.name()).Clone());
    }
  }
  return t;
}

void ExpectBitEqual(const Trained& want, const Trained& got) {
  ASSERT_EQ(want.params.size(), got.params.size());
  for (size_t i = 0; i < want.params.size(); ++i) {
    ASSERT_EQ(want.params[i].bytes(), got.params[i].bytes());
    EXPECT_EQ(
        std::memcmp(want.params[i].raw_data(), got.params[i].raw_data(), want.params[i].bytes()), 0)
        << "variable " << i;
  }
  EXPECT_EQ(want.losses, got.losses);
}

TEST(PlaceableBlockTest, BuilderPlacesTheOptimizerBlockOnAServer) {
  Programs p;
  BuildMlp(true, &p);
  const proto::ProgramDesc& program = p.main.desc();
  int ops = 0;
  for (const auto& op : program.blocks(0).ops()) {
    if (op.type() != "placeable_block") continue;
    ++ops;
    const proto::BlockDesc& block = program.blocks(BlockAttr(op, "sub_block"));
    EXPECT_EQ(block.placement().role(), proto::Placement::ROLE_PSERVER);
    EXPECT_EQ(block.placement().index(), -1);
    EXPECT_EQ(op.role(), proto::ROLE_OPTIMIZE);
    int adams = 0;
    for (const auto& inner : block.ops()) adams += inner.type() == "adam";
    EXPECT_EQ(adams, 4);  // two weights, two biases
    // X: the four gradients and the learning rate; Out: the four parameters.
    EXPECT_EQ(InputVars(op, "X").size(), 5u);
    EXPECT_EQ(OutputVars(op, "Out").size(), 4u);
  }
  EXPECT_EQ(ops, 1);
  for (const auto& op : program.blocks(0).ops()) EXPECT_NE(op.type(), "adam");
}

TEST(PlaceableBlockTest, SequentialExecutorMatchesInlineOptimizer) {
  ExpectBitEqual(Train(false, 0), Train(true, 0));
}

TEST(PlaceableBlockTest, ActorExecutorOnePlaceMatchesInlineOptimizer) {
  const Trained want = Train(false, 0);
  ExpectBitEqual(want, Train(true, 1));
}

TEST(PlaceableBlockTest, TwoPlacesMergeGradientsBeforeTheBlock) {
  // Two places with the batch split compute the one-place numbers only if
  // the block reads merged gradients.
  for (ReduceStrategy reduce : {ReduceStrategy::kAllReduce, ReduceStrategy::kReduce}) {
    SCOPED_TRACE(reduce == ReduceStrategy::kReduce ? "reduce" : "allreduce");
    const Trained want = Train(false, 2, reduce);
    const Trained got = Train(true, 2, reduce);
    ExpectBitEqual(want, got);
    // And the same as one place, up to the order of the sums.
    const Trained one = Train(false, 0);
    for (size_t i = 0; i < one.params.size(); ++i) {
      for (int64_t k = 0; k < one.params[i].numel(); ++k) {
        ASSERT_NEAR(one.params[i].GetAsDouble(k), got.params[i].GetAsDouble(k), 1e-9);
      }
    }
  }
}

// Sub-blocks nested as deep as validation allows, the innermost one computing
// y = 2 x; the outermost run by a go op (on a fiber, with its 1 MiB stack) or
// by a placeable block.
proto::ProgramDesc NestedBlocks(const std::string& outer_op) {
  auto run_block = [](const std::string& type, int block) {
    return "ops { type: \"" + type +
           "\" attrs { name: \"sub_block\" block: " + std::to_string(block) + " } }\n";
  };
  std::string text =
      "blocks { idx: 0 parent_idx: -1\n"
      "vars { name: \"x\" kind: DENSE_TENSOR dtype: FLOAT32 shape: [2] }\n"
      "vars { name: \"y\" kind: DENSE_TENSOR dtype: FLOAT32 shape: [2] }\n" +
      run_block(outer_op, 1) + "}\n";
  for (int b = 1; b <= kMaxSubBlockNesting; ++b) {
    text += "blocks { idx: " + std::to_string(b) + " parent_idx: " + std::to_string(b - 1) + "\n";
    text += b < kMaxSubBlockNesting
                ? run_block("placeable_block", b + 1)
                : "ops { type: \"scale\" inputs { name: \"X\" vars: \"x\" } outputs { name: "
                  "\"Out\" vars: \"y\" } attrs { name: \"scale\" f: 2 } }\n";
    text += "}\n";
  }
  return ParseProgramText(text);
}

TEST(PlaceableBlockTest, SubBlocksNestedAsDeepAsAllowedRunOnEveryExecutor) {
  Tensor x(DataType::kFloat32, {2});
  x.Fill(1.5);
  for (const std::string outer : {"placeable_block", "go"}) {
    SCOPED_TRACE(outer);
    const proto::ProgramDesc program = NestedBlocks(outer);
    Scope scope;
    EXPECT_EQ(Executor().Run(program, &scope, {{"x", x}}, {"y"})[0].GetAsDouble(1), 3.0);
    Scope actor_scope;
    ParallelExecutor actors(program, &actor_scope, {.places = {Place::Cpu()}});
    EXPECT_EQ(actors.Run({{"x", x}}, {"y"})[0].GetAsDouble(1), 3.0);
  }
}

}  // namespace
}  // namespace rill
