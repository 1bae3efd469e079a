#include "runtime/graph/op_cost.h"

#include <string>
#include <string_view>
#include <unordered_map>

#include "rill/op_desc.h"

namespace rill {
namespace {

constexpr double kFlopsPerNs = 40;      // one core's GEMM throughput, about 40 GFLOP/s
constexpr double kElementsPerNs = 2.5;  // memory-bound elementwise work

class CostModel {
 public:
  CostModel(const VarIndex& vars, int64_t batch_hint) : vars_(vars), batch_hint_(batch_hint) {}

  double Estimate(const proto::OpDesc& op) const {
    const std::string& type = op.type();
    if (type == "mul" || type == "mul_grad") return Gemm(op, "X", "Y", type == "mul_grad");
    if (type == "matmul" || type == "matmul_grad") return Gemm(op, "X", "Y", type == "matmul_grad");
    if (type == "conv2d" || type == "conv2d_grad") return Conv(op, type == "conv2d_grad");
    double elements = 0;
    for (const auto& slot : op.inputs()) {
      for (const auto& name : slot.vars()) elements += Elements(name);
    }
    for (const auto& slot : op.outputs()) {
      for (const auto& name : slot.vars()) elements += Elements(name);
    }
    return kOpOverheadNs + elements / kElementsPerNs;
  }

 private:
  // Declared shape with unknown dims replaced by the batch hint; empty if undeclared.
  Shape ShapeOf(const std::string& name) const {
    const proto::VarDesc* desc = vars_.Find(name);
    if (desc == nullptr) return {};
    Shape shape = VarShape(*desc);
    for (auto& d : shape) d = d < 0 ? batch_hint_ : d;
    return shape;
  }

  double Elements(const std::string& name) const {
    auto it = elements_.find(name);
    if (it != elements_.end()) return it->second;
    double n = 1;
    const proto::VarDesc* desc = vars_.Find(name);
    if (desc != nullptr) {
      for (int64_t d : desc->shape()) n *= static_cast<double>(d < 0 ? batch_hint_ : d);
    }
    elements_.emplace(std::string_view(name), n);
    return n;
  }

  // The first variable of an input slot (a reference into the op), or "".
  static const std::string& First(const proto::OpDesc& op, const std::string& slot) {
    static const std::string kNone;
    for (const auto& s : op.inputs()) {
      if (s.name() == slot && s.vars_size() > 0) return s.vars(0);
    }
    return kNone;
  }

  // X [.., K] times Y [K, ..]: about numel(X) * numel(Y) / K multiply-adds.
  double Gemm(const proto::OpDesc& op, const char* x_slot, const char* y_slot, bool grad) const {
    const Shape x = ShapeOf(First(op, x_slot));
    const Shape y = ShapeOf(First(op, y_slot));
    if (x.empty() || y.empty()) return kOpOverheadNs;
    const double k = static_cast<double>(y.size() >= 2 ? y[y.size() - 2] : y[0]);
    double flops = 2 * Elements(First(op, x_slot)) * Elements(First(op, y_slot)) / (k > 0 ? k : 1);
    if (grad) flops *= static_cast<double>(op.outputs_size());  // one product per gradient
    return kOpOverheadNs + flops / kFlopsPerNs;
  }

  // Output elements times the filter's taps per output.
  double Conv(const proto::OpDesc& op, bool grad) const {
    const Shape input = ShapeOf(First(op, "Input"));
    const Shape filter = ShapeOf(First(op, "Filter"));
    if (input.size() != 4 || filter.size() != 4) return kOpOverheadNs;
    const double taps = static_cast<double>(filter[1] * filter[2] * filter[3]);
    // Output spatial size taken as the input's (stride 1, same padding): an upper bound.
    const double outputs = static_cast<double>(input[0] * filter[0] * input[2] * input[3]);
    double flops = 2 * outputs * taps;
    if (grad) flops *= static_cast<double>(op.outputs_size());
    return kOpOverheadNs + flops / kFlopsPerNs;
  }

  const VarIndex& vars_;
  int64_t batch_hint_;
  // By views of names in the program, which outlives the model.
  mutable std::unordered_map<std::string_view, double> elements_;
};

}  // namespace

void EstimateOpCosts(const proto::ProgramDesc& program, int block_index, const VarIndex& vars,
                     int64_t batch_hint, SsaGraph* graph) {
  const CostModel model(vars, batch_hint);
  const proto::BlockDesc& block = program.blocks(block_index);
  for (OpNode& node : graph->ops) {
    node.cost_ns = node.kind == OpNodeKind::kCompute ? model.Estimate(block.ops(node.op_index))
                                                     : kOpOverheadNs;
  }
}

}  // namespace rill
