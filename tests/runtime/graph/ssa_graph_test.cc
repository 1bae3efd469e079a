// Tests of the SSA graph: versions, hazard edges, feed nodes, replicas and
// stream assignment.
#include "runtime/graph/ssa_graph.h"

#include <gtest/gtest.h>

#include <sstream>

#include "rill/op_registry.h"
#include "rill/program_io.h"
#include "rill/validate.h"
#include "runtime/graph/graph_dot.h"

namespace rill {
namespace {

std::string Var(const std::string& name, bool persistable = false) {
  return "vars { name: \"" + name + "\" kind: DENSE_TENSOR dtype: FLOAT32 shape: [2, 2]" +
         (persistable ? " persistable: true" : "") + " }\n";
}

std::string Scale(const std::string& x, const std::string& out) {
  return "ops { type: \"scale\" inputs { name: \"X\" vars: \"" + x +
         "\" } outputs { name: \"Out\" vars: \"" + out + "\" } }\n";
}

std::string Add(const std::string& x, const std::string& y, const std::string& out) {
  return "ops { type: \"elementwise_add\" inputs { name: \"X\" vars: \"" + x +
         "\" } inputs { name: \"Y\" vars: \"" + y + "\" } outputs { name: \"Out\" vars: \"" + out +
         "\" } }\n";
}

proto::ProgramDesc Program(const std::string& vars, const std::string& ops) {
  proto::ProgramDesc p = ParseProgramText("blocks { idx: 0 parent_idx: -1\n" + vars + ops + "}\n");
  Validate(p);
  return p;
}

// The compute node of op `index` in the block.
const OpNode& OpAt(const SsaGraph& g, int index, int place = 0) {
  for (const OpNode& op : g.ops) {
    if (op.op_index == index && op.place == place) return op;
  }
  ADD_FAILURE() << "no node for op " << index;
  return g.ops[0];
}

bool DependsOn(const SsaGraph& g, int op_index, int on_index) {
  const auto& preds = OpAt(g, op_index).predecessors;
  return std::find(preds.begin(), preds.end(), OpAt(g, on_index).id) != preds.end();
}

TEST(SsaGraphTest, EachWriteMakesANewVersionAndReadersSeeTheRightOne) {
  // x -> a; a = scale(a) (in place); b = scale(a): b reads version 2 of a.
  const auto g = BuildSsaGraph(
      Program(Var("x") + Var("a") + Var("b"), Scale("x", "a") + Scale("a", "a") + Scale("a", "b")),
      0);
  const OpNode& last = OpAt(g, 2);
  ASSERT_EQ(last.inputs.size(), 1u);
  EXPECT_EQ(g.vars[last.inputs[0]].name, "a");
  EXPECT_EQ(g.vars[last.inputs[0]].version, 2);
  EXPECT_EQ(g.vars[last.inputs[0]].producer, OpAt(g, 1).id);
  EXPECT_TRUE(DependsOn(g, 1, 0));
  EXPECT_TRUE(DependsOn(g, 2, 1));
}

TEST(SsaGraphTest, WriteAfterReadBecomesAControlEdge) {
  // op 0 reads a, op 1 overwrites a: op 1 must wait for op 0 though no data flows.
  const auto g = BuildSsaGraph(
      Program(Var("a", true) + Var("b") + Var("c", true), Scale("a", "b") + Scale("c", "a")), 0);
  EXPECT_TRUE(DependsOn(g, 1, 0));
  EXPECT_EQ(g.ControlEdgeCount(), 1);
}

TEST(SsaGraphTest, WriteAfterWriteWithoutReaderBecomesAControlEdge) {
  const auto g = BuildSsaGraph(
      Program(Var("x", true) + Var("y", true) + Var("a"), Scale("x", "a") + Scale("y", "a")), 0);
  EXPECT_TRUE(DependsOn(g, 1, 0));
  EXPECT_EQ(g.ControlEdgeCount(), 1);
}

TEST(SsaGraphTest, IndependentOpsDoNotDepend) {
  const auto g = BuildSsaGraph(
      Program(Var("x", true) + Var("a") + Var("b"), Scale("x", "a") + Scale("x", "b")), 0);
  EXPECT_FALSE(DependsOn(g, 1, 0));
  EXPECT_EQ(g.ControlEdgeCount(), 0);
}

TEST(SsaGraphTest, NonPersistableInputsGetFeedNodesParametersDoNot) {
  const auto g =
      BuildSsaGraph(Program(Var("x") + Var("w", true) + Var("y"), Add("x", "w", "y")), 0);
  int feeds = 0;
  for (const OpNode& op : g.ops) {
    if (op.kind != OpNodeKind::kFeed) continue;
    ++feeds;
    EXPECT_EQ(g.vars[op.outputs[0]].name, "x");
  }
  EXPECT_EQ(feeds, 1);
  EXPECT_EQ(g.Sources().size(), 1u);  // the feed; w is ready at the start
  // Feed nodes come first: the op order stays topological.
  EXPECT_EQ(g.ops[0].kind, OpNodeKind::kFeed);
}

TEST(SsaGraphTest, ReplicatesPerPlace) {
  GraphOptions options;
  options.places = {Place::Cpu(), Place::Cpu(), Place::Cpu()};
  const auto g = BuildSsaGraph(Program(Var("x") + Var("a"), Scale("x", "a")), 0, options);
  EXPECT_EQ(g.ops.size(), 6u);  // a feed and a scale per place
  for (int p = 0; p < 3; ++p) EXPECT_EQ(OpAt(g, 0, p).place, p);
  for (const VarNode& var : g.vars) {
    for (int c : var.consumers) EXPECT_EQ(g.ops[c].place, var.place);
  }
}

TEST(SsaGraphTest, ChainsStayOnOneStreamAndHeavyBranchesSpread) {
  // A chain of cheap ops stays on one stream...
  std::string ops = Scale("x", "a");
  for (int i = 0; i < 10; ++i) ops += Scale("a", "a");
  GraphOptions options;
  options.streams_per_place = 2;
  const auto chain = BuildSsaGraph(Program(Var("x", true) + Var("a"), ops), 0, options);
  for (const OpNode& op : chain.ops) EXPECT_EQ(op.stream, chain.ops[0].stream);
  // ...while two independent big products go to different streams.
  const std::string big =
      "vars { name: \"m\" kind: DENSE_TENSOR dtype: FLOAT32 shape: [512, 512] persistable: true }\n"
      "vars { name: \"p\" kind: DENSE_TENSOR dtype: FLOAT32 shape: [512, 512] }\n"
      "vars { name: \"q\" kind: DENSE_TENSOR dtype: FLOAT32 shape: [512, 512] }\n";
  auto matmul = [](const std::string& out) {
    return "ops { type: \"matmul\" inputs { name: \"X\" vars: \"m\" } inputs { name: \"Y\" vars: "
           "\"m\" } outputs { name: \"Out\" vars: \"" +
           out + "\" } }\n";
  };
  const auto heavy = BuildSsaGraph(Program(big, matmul("p") + matmul("q")), 0, options);
  EXPECT_NE(OpAt(heavy, 0).stream, OpAt(heavy, 1).stream);
}

TEST(SsaGraphTest, SubBlockAccessesCountAsTheOpsOwn) {
  // Op 1 runs block 1, which reads a: it must follow op 0, which writes a.
  proto::ProgramDesc p = ParseProgramText(
      "blocks { idx: 0 parent_idx: -1 " + Var("x", true) + Var("a") + Var("b") + Scale("x", "a") +
      "ops { type: \"test_graph_cond\" attrs { name: \"sub_block\" block: 1 } } }\n"
      "blocks { idx: 1 parent_idx: 0 " +
      Scale("a", "b") + "}\n");
  const auto g = BuildSsaGraph(p, 0);
  EXPECT_TRUE(DependsOn(g, 1, 0));
}

TEST(SsaGraphTest, DotShowsVersionsPlacesAndControlEdges) {
  const auto g = BuildSsaGraph(
      Program(Var("a", true) + Var("b") + Var("c", true), Scale("a", "b") + Scale("c", "a")), 0);
  std::ostringstream dot;
  WriteDot(g, dot);
  EXPECT_NE(dot.str().find("digraph"), std::string::npos);
  EXPECT_NE(dot.str().find("a v1"), std::string::npos);
  EXPECT_NE(dot.str().find("style=dashed"), std::string::npos);
  EXPECT_NE(dot.str().find("cluster_place_0"), std::string::npos);
  std::ostringstream stats;
  WriteStats(g, stats);
  EXPECT_NE(stats.str().find("op nodes        2"), std::string::npos) << stats.str();
}

}  // namespace

RILL_REGISTER_OP(test_graph_cond, OpSchema("test_graph_cond")
                                      .Doc("Runs a sub-block.")
                                      .RequiredAttr("sub_block", AttrType::kBlock, "the body"));

}  // namespace rill
