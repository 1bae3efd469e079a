#include "tools/rill/dag_programs.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <unordered_map>
#include <vector>

#include "rill/error.h"
#include "rill/kernel_context.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"

namespace rill::cli {
namespace {

void BenchNodeKernel(KernelContext& ctx) {
  float sum = 0;
  const int inputs = ctx.InputCount("X");
  for (int i = 0; i < inputs; ++i) sum += ctx.Input("X", i).data<float>()[0];
  ctx.Output("Out")->Allocate<float>({1})[0] = 0.5f * sum + 1.0f;
}

std::string VarName(int64_t i) { return "v" + std::to_string(i); }

// Input lists per node, for each shape.
std::vector<std::vector<int64_t>> Inputs(const std::string& shape, int64_t n, uint64_t seed) {
  std::vector<std::vector<int64_t>> in(static_cast<size_t>(n));
  if (shape == "chain") {
    for (int64_t i = 1; i < n; ++i) in[i] = {i - 1};
  } else if (shape == "fanout") {
    for (int64_t i = 1; i + 1 < n; ++i) {
      in[i] = {0};
      in[n - 1].push_back(i);
    }
  } else if (shape == "grid") {
    const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(n))));
    RILL_CHECK(side * side == n, kInvalidArgument, "grid needs a square number of nodes, got ", n);
    for (int64_t r = 0; r < side; ++r) {
      for (int64_t c = 0; c < side; ++c) {
        auto& list = in[r * side + c];
        if (r > 0) list.push_back((r - 1) * side + c);
        if (c > 0) list.push_back(r * side + c - 1);
      }
    }
  } else if (shape == "random") {
    std::mt19937_64 rng(seed);
    for (int64_t i = 1; i < n; ++i) {
      auto& list = in[i];
      const int64_t want = std::min<int64_t>(4, i);
      while (static_cast<int64_t>(list.size()) < want) {
        const auto p = static_cast<int64_t>(rng() % static_cast<uint64_t>(i));
        if (std::find(list.begin(), list.end(), p) == list.end()) list.push_back(p);
      }
      std::sort(list.begin(), list.end());
    }
  } else {
    Fail(ErrorCode::kInvalidArgument, "unknown DAG shape \"", shape,
         "\" (expected chain, fanout, grid or random)");
  }
  return in;
}

}  // namespace

// Registered with the rill command, so that `rill graph` and `rill run` read
// the benchmark's programs too.
RILL_REGISTER_OP(bench_node,
                 OpSchema("bench_node")
                     .Doc("Out[1] = 0.5 * sum(X) + 1: the tiny op of the executor benchmark.")
                     .Input("X", "inputs of one element each", kOptional | kDuplicable)
                     .Output("Out", "one float")
                     .InferShape([](ShapeContext& ctx) {
                       ctx.SetOutput("Out", {1}, DataType::kFloat32);
                     })
                     .CpuKernel(BenchNodeKernel));

proto::ProgramDesc MakeDagProgram(const std::string& shape, int64_t nodes, uint64_t seed) {
  RILL_CHECK(nodes >= 3, kInvalidArgument, "a DAG needs at least 3 nodes, got ", nodes);
  const auto inputs = Inputs(shape, nodes, seed);
  proto::ProgramDesc program;
  auto* block = program.add_blocks();
  block->set_idx(0);
  block->set_parent_idx(-1);
  for (int64_t i = 0; i < nodes; ++i) {
    auto* var = block->add_vars();
    var->set_name(VarName(i));
    var->set_kind(proto::DENSE_TENSOR);
    var->set_dtype(proto::FLOAT32);
    var->add_shape(1);
  }
  for (int64_t i = 0; i < nodes; ++i) {
    auto* op = block->add_ops();
    op->set_type("bench_node");
    if (!inputs[i].empty()) {
      std::vector<std::string> names;
      for (int64_t p : inputs[i]) names.push_back(VarName(p));
      SetInput(op, "X", names);
    }
    SetOutput(op, "Out", {VarName(i)});
  }
  return program;
}

std::vector<std::vector<int>> DagPredecessors(const proto::ProgramDesc& program) {
  const auto& ops = program.blocks(0).ops();
  std::unordered_map<std::string, int> writer;
  for (int i = 0; i < ops.size(); ++i) writer[OutputVar(ops[i], "Out")] = i;
  std::vector<std::vector<int>> preds(static_cast<size_t>(ops.size()));
  for (int i = 0; i < ops.size(); ++i) {
    for (const auto& name : InputVars(ops[i], "X")) preds[i].push_back(writer.at(name));
  }
  return preds;
}

std::string DagOutputName(const proto::ProgramDesc& program) {
  return VarName(program.blocks(0).ops_size() - 1);
}

}  // namespace rill::cli
