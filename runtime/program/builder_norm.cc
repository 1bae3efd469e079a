// The normalisation layers of Builder (builder.h): BatchNorm and LayerNorm.
#include "rill/builder.h"
#include "rill/error.h"
#include "rill/op_desc.h"

namespace rill {

Var Builder::BatchNorm(const Var& x, Activation act, float momentum, float epsilon) {
  RILL_CHECK(x.shape.size() == 2 || x.shape.size() == 4, kInvalidArgument, "batch_norm: input ",
             x.name, " must be [N, C] or [N, C, H, W], is ", ShapeToString(x.shape));
  const int64_t channels = x.shape[1];
  RILL_CHECK(channels > 0, kInvalidArgument, "batch_norm: input ", x.name,
             " needs a known number of channels, is ", ShapeToString(x.shape));
  const std::string name = main_->UniqueName("batch_norm");
  Var scale = Parameter(name + ".scale", {channels}, Initializer::Constant(1), x.dtype);
  Var bias = Parameter(name + ".bias", {channels}, Initializer::Constant(0), x.dtype);
  // Persistable, not parameters: no gradient, no optimizer; each place of a
  // data-parallel run keeps its own copy (data_parallel.h).
  Var mean = Persistable(name + ".mean", {channels}, 0, x.dtype);
  Var variance = Persistable(name + ".variance", {channels}, 1, x.dtype);
  VarSlots inputs = {
      {"X", {x}}, {"Scale", {scale}}, {"Bias", {bias}}, {"Mean", {mean}}, {"Variance", {variance}}};
  std::string grad_stats;
  if (sync_batch_norm_) {
    // The whole batch's sums: this place's, then summed over the places.
    Var stats = AppendOp("batch_norm_stats", {{"X", {x}}}, {{"Stats", 1}})[0];
    AppendOpTo("sync_places_sum", {{"X", {stats}}}, {{"Out", {stats}}});
    inputs.push_back({"Stats", {stats}});
    // What the gradient's sums go through (sync_batch_norm's grad maker).
    grad_stats = Variable(name + ".grad_stats", {2 * channels}, DataType::kFloat64).name;
    // batch_norm's outputs take a name of this prefix: take it here too, so that
    // later layers' parameters are named alike with and without sync (one checkpoint serves both).
    main_->UniqueName("batch_norm");
  }
  Var y =
      AppendOpUpdating(sync_batch_norm_ ? "sync_batch_norm" : "batch_norm", inputs,
                       {{"Y", 1}, {"SavedMean", 1}, {"SavedVariance", 1}},
                       {{"MeanOut", {mean}}, {"VarianceOut", {variance}}}, [&](proto::OpDesc* op) {
                         SetAttr(op, "momentum", momentum);
                         SetAttr(op, "epsilon", epsilon);
                         if (!grad_stats.empty()) SetAttr(op, "grad_stats", grad_stats);
                       })[0];
  return Activate(y, act);
}

Var Builder::LayerNorm(const Var& x, int begin_norm_axis, float epsilon) {
  const int rank = static_cast<int>(x.shape.size());
  RILL_CHECK(begin_norm_axis >= 1 && begin_norm_axis < rank, kInvalidArgument,
             "layer_norm: begin_norm_axis ", begin_norm_axis, " must be in [1, ", rank,
             ") for input ", x.name, " ", ShapeToString(x.shape));
  int64_t cols = 1;
  for (int i = begin_norm_axis; i < rank; ++i) {
    RILL_CHECK(x.shape[static_cast<size_t>(i)] > 0, kInvalidArgument, "layer_norm: input ", x.name,
               " ", ShapeToString(x.shape), " needs known sizes from dim ", begin_norm_axis, " on");
    cols *= x.shape[static_cast<size_t>(i)];
  }
  const std::string name = main_->UniqueName("layer_norm");
  Var scale = Parameter(name + ".scale", {cols}, Initializer::Constant(1), x.dtype);
  Var bias = Parameter(name + ".bias", {cols}, Initializer::Constant(0), x.dtype);
  return AppendOp("layer_norm", {{"X", {x}}, {"Scale", {scale}}, {"Bias", {bias}}},
                  {{"Y", 1}, {"Mean", 1}, {"Variance", 1}}, [&](proto::OpDesc* op) {
                    SetAttr(op, "begin_norm_axis", begin_norm_axis);
                    SetAttr(op, "epsilon", epsilon);
                  })[0];
}

}  // namespace rill
