// accuracy: the fraction of rows whose label is among their top-k predicted
// indices (as produced by top_k). Not differentiable.
#include "ops/nn/softmax_util.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

void AccuracyKernel(KernelContext& ctx) {
  const AccuracyInputs args = ReadAccuracyInputs(ctx);
  const int64_t rows = args.rows;
  const int64_t k = args.k;
  const int64_t* idx = args.indices.data<int64_t>();
  const int64_t* lab = args.label.data<int64_t>();
  int64_t correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t* row = idx + r * k;
    bool hit = false;
    for (int64_t j = 0; j < k; ++j) hit |= row[j] == lab[r];
    correct += hit ? 1 : 0;
  }
  float* acc = ctx.Output("Accuracy")->Allocate<float>({1});
  acc[0] = rows == 0 ? 0.0f : static_cast<float>(static_cast<double>(correct) / rows);
  if (ctx.HasOutput("Correct")) ctx.Output("Correct")->Allocate<int64_t>({1})[0] = correct;
  if (ctx.HasOutput("Total")) ctx.Output("Total")->Allocate<int64_t>({1})[0] = rows;
}

void AccuracyShape(ShapeContext& ctx) {
  const Shape& out = ctx.InputShape("Out");
  const Shape& indices = ctx.InputShape("Indices");
  const Shape& label = ctx.InputShape("Label");
  ctx.Check(indices.size() == 2, "Indices must be [N, k], has shape ", ShapeToString(indices));
  ctx.Check(ShapesCompatible(out, indices), "Out has shape ", ShapeToString(out),
            " but Indices has shape ", ShapeToString(indices));
  ctx.Check(ctx.InputType("Indices") == DataType::kInt64, "Indices must be int64, is ",
            DataTypeName(ctx.InputType("Indices")));
  ctx.Check(ctx.InputType("Label") == DataType::kInt64, "Label must be int64, is ",
            DataTypeName(ctx.InputType("Label")));
  ctx.Check(label.size() == 1 || label.size() == 2, "Label must be [N, 1], has shape ",
            ShapeToString(label));
  if (label.size() == 2) ctx.CheckDim(label[1], 1, "last dim of Label (one class per row)");
  ctx.CheckDim(label[0], indices[0], "rows of Label and Indices");
  ctx.SetOutput("Accuracy", {1}, DataType::kFloat32);
  ctx.SetOutput("Correct", {1}, DataType::kInt64);
  ctx.SetOutput("Total", {1}, DataType::kInt64);
}

}  // namespace

RILL_REGISTER_OP(accuracy,
                 OpSchema("accuracy")
                     .Doc("Accuracy = fraction of rows whose Label is in Indices.")
                     .Input("Out", "top-k values [N, k] (only its shape is used)", kNoGradient)
                     .Input("Indices", "int64 top-k class indices [N, k]", kNoGradient)
                     .Input("Label", "int64 true class [N, 1]", kNoGradient)
                     .Output("Accuracy", "float32 [1]: Correct / Total")
                     .Output("Correct", "int64 [1]: rows with a hit", kOptional)
                     .Output("Total", "int64 [1]: rows", kOptional)
                     .InferShape(AccuracyShape)
                     .CpuKernel(AccuracyKernel));

}  // namespace rill
