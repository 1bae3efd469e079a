// sync_batch_norm: batch normalisation with the statistics of the whole batch
// when a data-parallel run splits it over places (Builder::BatchNorm with
// set_sync_batch_norm). Its ops, in the order the builder and
// append_backward emit them:
//
//   batch_norm_stats           X -> Stats: float64 [2C + 1], per channel the sum
//                              and the sum of squares of X, then the row count
//   sync_places_sum            Stats -> Stats: nothing on one place; with several
//                              the data-parallel plan makes it an allreduce, so
//                              every place holds the sums over the whole batch
//   sync_batch_norm            batch_norm's op, normalising with mean = sum / N
//                              and variance = sum of squares / N - mean^2
//   sync_batch_norm_grad_stats Scale@GRAD and Bias@GRAD of this place's rows (the
//                              gradient merge sums them as any gradient) and
//                              GradStats: float64 [2C], the sums of dY and of
//                              dY * (X - mean)
//   sync_places_sum            GradStats, summed over the places likewise
//   sync_batch_norm_grad       X@GRAD from the whole batch's sums, as
//                              batch_norm_grad computes it from one place's
//
// On one place the numbers are batch_norm's up to rounding (its variance is
// taken in two passes in X's type; here in one, in float64). Across
// processes (rill.distributed.ProcessGroup) only the places of each process
// are summed: each process normalises its own rows.
#include <cmath>
#include <vector>

#include "ops/nn/batch_norm_channels.h"
#include "ops/nn/batch_norm_util.h"
#include "rill/kernel_context.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

// A float64 [size] statistics vector of `op` in `slot`, checked.
const double* StatsOf(const KernelContext& ctx, const char* op, const char* slot, int64_t size) {
  const Tensor& t = ctx.Input(slot);
  RILL_CHECK(t.rank() == 1 && t.dim(0) == size && t.dtype() == DataType::kFloat64, kInvalidArgument,
             op, ": ", slot, " (", ctx.InputName(slot), ") is ", t.Describe(), " but must be [",
             size, "] float64");
  return t.data<double>();
}

void BatchNormStatsKernel(KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const BatchNormDims d = BatchNormDimsOf("batch_norm_stats", ctx.InputName("X"), x.shape());
  double* stats = ctx.Output("Stats")->Allocate<double>({2 * d.c + 1});
  VisitFloatType(x.dtype(), [&]<class T>() {
    const T* v = x.data<T>();
    ForEachChannel(d, [&](int64_t c) {
      stats[c] = ChannelSum<double>(d, c, [&](int64_t i) { return static_cast<double>(v[i]); });
      stats[d.c + c] = ChannelSum<double>(d, c, [&](int64_t i) {
        const double u = static_cast<double>(v[i]);
        return u * u;
      });
    });
  });
  stats[2 * d.c] = static_cast<double>(d.per_channel());
}

void InferBatchNormStatsShape(ShapeContext& ctx) {
  const BatchNormDims d =
      BatchNormDimsOf("batch_norm_stats", ctx.InputName("X"), ctx.InputShape("X"));
  ctx.SetOutput("Stats", {d.c < 0 ? -1 : 2 * d.c + 1}, DataType::kFloat64);
}

// Out = X; with several places the data-parallel plan turns the op into an
// allreduce (runtime/graph/data_parallel.h).
void SyncPlacesSumKernel(KernelContext& ctx) {
  if (ctx.InputName("X") == OutputVar(ctx.op(), "Out")) return;  // in place
  *ctx.Output("Out") = ctx.Input("X").Clone();
}

void SyncBatchNormKernel(KernelContext& ctx) {
  const BatchNormForward f = CheckBatchNormKernel(ctx, "sync_batch_norm");
  const BatchNormDims& d = f.dims;
  const double* stats = f.is_test ? nullptr : StatsOf(ctx, "sync_batch_norm", "Stats", 2 * d.c + 1);
  RILL_CHECK(f.is_test || stats[2 * d.c] > 0, kInvalidArgument, "sync_batch_norm: Stats (",
             ctx.InputName("Stats"), ") counts no rows over the places");
  VisitFloatType(f.x->dtype(), [&]<class T>() {
    const size_t c = static_cast<size_t>(d.c);
    std::vector<T> running_mean(f.mean->data<T>(), f.mean->data<T>() + c);
    std::vector<T> running_var(f.variance->data<T>(), f.variance->data<T>() + c);
    std::vector<T> mean = running_mean, var = running_var;
    for (size_t ch = 0; ch < c && !f.is_test; ++ch) {
      const double count = stats[2 * c];
      const double m = stats[ch] / count;
      mean[ch] = static_cast<T>(m);
      var[ch] = static_cast<T>(std::max(0.0, stats[c + ch] / count - m * m));
    }
    WriteBatchNormOutputs<T>(ctx, f, running_mean, running_var, mean, var);
  });
}

void SyncBatchNormGradStatsKernel(KernelContext& ctx) {
  const BatchNormBackward b = CheckBatchNormGradKernel(ctx, "sync_batch_norm_grad_stats");
  const int64_t c = b.dims.c;
  double* grad_stats = ctx.Output("GradStats")->Allocate<double>({2 * c});
  VisitFloatType(b.x->dtype(), [&]<class T>() {
    std::vector<T> sum_dy, sum_dy_xmu;
    BatchNormGradSums<T>(b, &sum_dy, &sum_dy_xmu);
    for (int64_t ch = 0; ch < c; ++ch) {
      grad_stats[ch] = static_cast<double>(sum_dy[ch]);
      grad_stats[c + ch] = static_cast<double>(sum_dy_xmu[ch]);
    }
    WriteBatchNormParamGrads<T>(ctx, b, sum_dy, sum_dy_xmu);
  });
}

// As batch_norm_grad's X@GRAD, with the sums and the count of the whole batch.
void SyncBatchNormGradKernel(KernelContext& ctx) {
  const BatchNormBackward b = CheckBatchNormGradKernel(ctx, "sync_batch_norm_grad");
  const int64_t c = b.dims.c;
  const double* grad_stats = StatsOf(ctx, "sync_batch_norm_grad", "GradStats", 2 * c);
  const double* stats =
      b.is_test ? nullptr : StatsOf(ctx, "sync_batch_norm_grad", "Stats", 2 * c + 1);
  VisitFloatType(b.x->dtype(), [&]<class T>() {
    const std::vector<T> sum_dy(grad_stats, grad_stats + c);
    const std::vector<T> sum_dy_xmu(grad_stats + c, grad_stats + 2 * c);
    const T count = b.is_test ? T(1) : static_cast<T>(stats[2 * c]);
    WriteBatchNormInputGrad<T>(b, sum_dy, sum_dy_xmu, count, ctx.Output("X@GRAD"));
  });
}

void InferSyncBatchNormShape(ShapeContext& ctx) {
  const Shape& x = ctx.InputShape("X");
  const BatchNormDims d = BatchNormDimsOf("sync_batch_norm", ctx.InputName("X"), x);
  ctx.Check(ctx.InputType("Stats") == DataType::kFloat64, "sync_batch_norm: Stats (",
            ctx.InputName("Stats"), ") must be float64");
  const Shape channels{d.c >= 0 ? d.c : ctx.InputShape("Scale")[0]};
  ctx.SetOutput("Y", x, ctx.InputType("X"));
  for (const char* slot : {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"}) {
    ctx.SetOutput(slot, channels, ctx.InputType("X"));
  }
}

void InferGradStatsShape(ShapeContext& ctx) {
  const Shape& scale = ctx.InputShape("Scale");
  ctx.SetOutput("Scale@GRAD", scale, ctx.InputType("X"));
  ctx.SetOutput("Bias@GRAD", scale, ctx.InputType("X"));
  ctx.SetOutput("GradStats", {scale[0] < 0 ? -1 : 2 * scale[0]}, DataType::kFloat64);
}

void InferSyncBatchNormGradShape(ShapeContext& ctx) {
  ctx.SetOutput("X@GRAD", ctx.InputShape("X"), ctx.InputType("X"));
}

// Three ops (the file's comment): the sums of this place, their sum over the
// places, then X@GRAD. GradStats is the variable the builder declared for it
// (attribute "grad_stats").
std::vector<proto::OpDesc> SyncBatchNormGrad(const proto::OpDesc& fwd) {
  const proto::Attr* named = FindAttr(fwd, "grad_stats");
  const std::string grad_stats = named != nullptr ? AttrValue<std::string>(*named) : "";
  RILL_CHECK(!grad_stats.empty(), kInvalidArgument,
             "sync_batch_norm: attribute grad_stats names no variable (Builder::BatchNorm with "
             "set_sync_batch_norm declares one)");
  const std::string x = InputVar(fwd, "X"), y_grad = GradVarName(OutputVar(fwd, "Y"));
  auto common = [&](proto::OpDesc* op) {
    SetInput(op, "X", {x});
    SetInput(op, "Scale", {InputVar(fwd, "Scale")});
    SetInput(op, "SavedMean", {OutputVar(fwd, "SavedMean")});
    SetInput(op, "SavedVariance", {OutputVar(fwd, "SavedVariance")});
    SetInput(op, "Y@GRAD", {y_grad});
    if (const proto::Attr* attr = FindAttr(fwd, "is_test")) *MutableAttr(op, "is_test") = *attr;
  };
  proto::OpDesc sums;
  sums.set_type("sync_batch_norm_grad_stats");
  common(&sums);
  SetOutput(&sums, "Scale@GRAD", {GradVarName(InputVar(fwd, "Scale"))});
  SetOutput(&sums, "Bias@GRAD", {GradVarName(InputVar(fwd, "Bias"))});
  SetOutput(&sums, "GradStats", {grad_stats});
  proto::OpDesc sync;
  sync.set_type("sync_places_sum");
  SetInput(&sync, "X", {grad_stats});
  SetOutput(&sync, "Out", {grad_stats});
  proto::OpDesc dx;
  dx.set_type("sync_batch_norm_grad");
  common(&dx);
  SetInput(&dx, "GradStats", {grad_stats});
  SetInput(&dx, "Stats", {InputVar(fwd, "Stats")});
  SetOutput(&dx, "X@GRAD", {GradVarName(x)});
  return {sums, sync, dx};
}

}  // namespace

RILL_REGISTER_OP(batch_norm_stats,
                 OpSchema("batch_norm_stats")
                     .Doc("Per channel of [N, C] or NCHW X: the sum and the sum of squares of its "
                          "elements, then the rows counted (float64 [2C + 1]).")
                     .Input("X", "[N, C] or [N, C, H, W]", kNoGradient)
                     .Output("Stats", "float64 [2C + 1]: sums, sums of squares, count", kNoGradient)
                     .InferShape(InferBatchNormStatsShape)
                     .CpuKernel(BatchNormStatsKernel));

RILL_REGISTER_OP(sync_places_sum,
                 OpSchema("sync_places_sum")
                     .Doc("Out = X on one place; with several places of a data-parallel run, the "
                          "sum of X over the places on every place (an allreduce).")
                     .Input("X", "the values of this place", kNoGradient)
                     .Output("Out", "their sum over the places (normally X itself)", kNoGradient)
                     .InferShape(SameShapeAs("X", "Out"))
                     .CpuKernel(SyncPlacesSumKernel));

RILL_REGISTER_OP(
    sync_batch_norm,
    OpSchema("sync_batch_norm")
        .Doc("batch_norm normalising with the statistics Stats holds (batch_norm_stats summed over "
             "the places by sync_places_sum): the whole batch's, however the places split it.")
        .Input("X", "[N, C] or [N, C, H, W]")
        .Input("Scale", "[C], the multiplier (gamma)")
        .Input("Bias", "[C], the offset (beta)")
        .Input("Mean", "[C], the running mean (persistable, not trained)", kNoGradient)
        .Input("Variance", "[C], the running variance (persistable, not trained)", kNoGradient)
        .Input("Stats", "float64 [2C + 1] from batch_norm_stats, summed over the places",
               kNoGradient)
        .Output("Y", "the normalised X, X's shape")
        .Output("MeanOut", "the running mean after this step: the variable Mean", kNoGradient)
        .Output("VarianceOut", "the running variance after this step: the variable Variance",
                kNoGradient)
        .Output("SavedMean", "[C], the mean that normalised", kNoGradient)
        .Output("SavedVariance", "[C], 1 / sqrt(variance + epsilon)", kNoGradient)
        .Attr("momentum", 0.9f, "weight of the old running statistics in their update",
              InRange(0.0, 1.0))
        .Attr("epsilon", 1e-5f, "added to the variance before its square root", InRange(0.0, 1.0))
        .Attr("is_test", false, "inference: normalise with the running statistics, keep them")
        .Attr("data_layout", "NCHW", "the layout of X (channels at dim 1)", OneOf({"NCHW"}))
        .Attr("grad_stats", "",
              "the float64 [2C] variable the gradient's sums over the places go through")
        .InferShape(InferSyncBatchNormShape)
        .CpuKernel(SyncBatchNormKernel)
        .Grad(SyncBatchNormGrad));

RILL_REGISTER_OP(sync_batch_norm_grad_stats,
                 OpSchema("sync_batch_norm_grad_stats")
                     .Doc("sync_batch_norm's gradient, first part: Scale@GRAD and Bias@GRAD of "
                          "this place's rows, and the sums of dY and dY * (X - mean) per channel.")
                     .Input("X", "the forward X")
                     .Input("Scale", "the forward Scale")
                     .Input("SavedMean", "the forward SavedMean", kNoGradient)
                     .Input("SavedVariance", "the forward SavedVariance", kNoGradient)
                     .Input("Y@GRAD", "gradient of Y; absent means zero", kOptional)
                     .Output("Scale@GRAD", "gradient of Scale (this place's rows)", kOptional)
                     .Output("Bias@GRAD", "gradient of Bias (this place's rows)", kOptional)
                     .Output("GradStats", "float64 [2C]: sums of dY, of dY * (X - mean)",
                             kNoGradient)
                     .Attr("is_test", false, "the forward op used the running statistics")
                     .InferShape(InferGradStatsShape)
                     .CpuKernel(SyncBatchNormGradStatsKernel));

RILL_REGISTER_OP(sync_batch_norm_grad,
                 OpSchema("sync_batch_norm_grad")
                     .Doc("sync_batch_norm's gradient with respect to X, from GradStats and Stats "
                          "summed over the places.")
                     .Input("X", "the forward X")
                     .Input("Scale", "the forward Scale")
                     .Input("SavedMean", "the forward SavedMean", kNoGradient)
                     .Input("SavedVariance", "the forward SavedVariance", kNoGradient)
                     .Input("Y@GRAD", "gradient of Y; absent means zero", kOptional)
                     .Input("GradStats", "float64 [2C], summed over the places", kNoGradient)
                     .Input("Stats", "the forward Stats (the count of rows)", kNoGradient)
                     .Output("X@GRAD", "gradient of X", kOptional)
                     .Attr("is_test", false, "the forward op used the running statistics")
                     .InferShape(InferSyncBatchNormGradShape)
                     .CpuKernel(SyncBatchNormGradKernel));

}  // namespace rill
