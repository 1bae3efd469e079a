// concat: Out = the X tensors joined along `axis`. Its gradient slices
// Out@GRAD back into one piece per input.
#include <cstring>
#include <string_view>
#include <vector>

#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"

namespace rill {
namespace {

int NormalizeAxis(int axis, int rank) {
  RILL_CHECK(rank >= 1, kInvalidArgument, "concat needs inputs of rank >= 1");
  RILL_CHECK(axis >= -rank && axis < rank, kInvalidArgument, "axis ", axis,
             " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

const proto::Slot* FindSlot(const google::protobuf::RepeatedPtrField<proto::Slot>& slots,
                            const std::string& name) {
  for (const auto& s : slots) {
    if (s.name() == name) return &s;
  }
  return nullptr;
}

// True when `grad` is the gradient variable of `var`: "var@GRAD", or the
// "var@GRAD@RENAME@n" that append_backward writes for a second contribution.
bool IsGradOf(std::string_view grad, std::string_view var) {
  const std::string_view suffix = kGradSuffix;
  constexpr std::string_view kRename = "@RENAME@";
  if (grad.size() < var.size() + suffix.size() || grad.substr(0, var.size()) != var ||
      grad.substr(var.size(), suffix.size()) != suffix) {
    return false;
  }
  grad.remove_prefix(var.size() + suffix.size());
  return grad.empty() || grad.substr(0, kRename.size()) == kRename;
}

// Pairs X[i] with its entry of the X@GRAD slot. append_backward drops the
// gradients of inputs that need none, so when the lists differ in length the
// pairing goes by name (order is kept, so one forward pass suffices).
class GradMatcher {
 public:
  GradMatcher(int inputs, const proto::Slot* grads)
      : grads_(grads), positional_(grads != nullptr && grads->vars_size() == inputs) {}
  // Index into X@GRAD of input i named `name`, or -1; call with i = 0, 1, ... in order.
  int Next(int i, const std::string& name) {
    if (grads_ == nullptr) return -1;
    if (positional_) return i;
    if (next_ < grads_->vars_size() && IsGradOf(grads_->vars(next_), name)) return next_++;
    return -1;
  }

 private:
  const proto::Slot* grads_;
  bool positional_;
  int next_ = 0;
};

void ConcatShape(ShapeContext& ctx) {
  const int n = ctx.InputCount("X");
  ctx.Check(n >= 1, "concat needs at least one input");
  Shape out = ctx.InputShape("X", 0);
  const DataType dtype = ctx.InputType("X", 0);
  const int rank = static_cast<int>(out.size());
  const int axis = NormalizeAxis(ctx.Attr<int>("axis"), rank);
  for (int i = 1; i < n; ++i) {
    const Shape& s = ctx.InputShape("X", i);
    ctx.Check(static_cast<int>(s.size()) == rank, "X[", i, "] ", ShapeToString(s),
              " has a different rank from X[0] ", ShapeToString(out));
    ctx.Check(ctx.InputType("X", i) == dtype, "X[", i, "] is ", DataTypeName(ctx.InputType("X", i)),
              ", X[0] is ", DataTypeName(dtype));
    for (int d = 0; d < rank; ++d) {
      if (d == axis) {
        out[d] = (out[d] < 0 || s[d] < 0) ? -1 : out[d] + s[d];
      } else {
        ctx.CheckDim(out[d], s[d], StrCat("X[", i, "] ", ShapeToString(s), " dim ", d));
        if (out[d] < 0) out[d] = s[d];
      }
    }
  }
  for (const auto& name : OutputVars(ctx.op(), "Out")) {
    for (int i = 0; i < n; ++i) {
      ctx.Check(name != ctx.InputName("X", i), "Out may not be one of the inputs (", name, ")");
    }
  }
  ctx.SetOutput("Out", out, dtype);
}

void ConcatKernel(KernelContext& ctx) {
  const int n = ctx.InputCount("X");
  RILL_CHECK(n >= 1, kInvalidArgument, "concat needs at least one input");
  const Tensor& first = ctx.Input("X", 0);
  const int rank = first.rank();
  const int axis = NormalizeAxis(ctx.Attr<int>("axis"), rank);
  const DataType dtype = first.dtype();
  const size_t elem = SizeOf(dtype);
  Shape out_shape = first.shape();
  out_shape[axis] = 0;
  for (int i = 0; i < n; ++i) {
    const Tensor& x = ctx.Input("X", i);
    RILL_CHECK(x.rank() == rank && x.dtype() == dtype, kInvalidArgument, "X[", i, "] ",
               x.Describe(), " does not match X[0] ", first.Describe());
    for (int d = 0; d < rank; ++d) {
      RILL_CHECK(d == axis || x.dim(d) == first.dim(d), kInvalidArgument, "X[", i, "] ",
                 x.Describe(), " differs from X[0] ", first.Describe(), " in dim ", d);
    }
    out_shape[axis] += x.dim(axis);
  }
  const int64_t outer = DimProduct(out_shape, 0, axis);
  const size_t out_row = static_cast<size_t>(DimProduct(out_shape, axis, rank)) * elem;
  Tensor* out = ctx.Output("Out");
  out->Allocate(dtype, out_shape);
  char* dst = static_cast<char*>(out->raw_data());
  size_t offset = 0;
  for (int i = 0; i < n; ++i) {
    const Tensor& x = ctx.Input("X", i);
    const size_t row = static_cast<size_t>(DimProduct(x.shape(), axis, rank)) * elem;
    if (row == 0) continue;
    const char* src = static_cast<const char*>(x.raw_data());
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(dst + o * out_row + offset, src + o * row, row);
    }
    offset += row;
  }
}

// X@GRAD[i] = the slice of Out@GRAD that X[i] filled; zeros if Out@GRAD is missing.
void ConcatGradKernel(KernelContext& ctx) {
  const proto::Slot* grads = FindSlot(ctx.op().outputs(), GradVarName("X"));
  if (grads == nullptr || grads->vars_size() == 0) return;
  const int n = ctx.InputCount("X");
  const Tensor& first = ctx.Input("X", 0);
  const int rank = first.rank();
  const int axis = NormalizeAxis(ctx.Attr<int>("axis"), rank);
  const DataType dtype = first.dtype();
  const size_t elem = SizeOf(dtype);
  const int64_t outer = DimProduct(first.shape(), 0, axis);
  size_t out_row = 0;
  for (int i = 0; i < n; ++i) {
    out_row += static_cast<size_t>(DimProduct(ctx.Input("X", i).shape(), axis, rank)) * elem;
  }
  const char* dout = nullptr;
  if (ctx.InputReady("Out@GRAD")) {
    const Tensor& g = ctx.Input("Out@GRAD");
    RILL_CHECK(g.dtype() == dtype && static_cast<size_t>(g.numel()) * elem == out_row * outer,
               kInvalidArgument, "Out@GRAD ", g.Describe(), " does not match the inputs");
    dout = static_cast<const char*>(g.raw_data());
  }
  GradMatcher matcher(n, grads);
  size_t offset = 0;
  for (int i = 0; i < n; ++i) {
    const Tensor& x = ctx.Input("X", i);
    const size_t row = static_cast<size_t>(DimProduct(x.shape(), axis, rank)) * elem;
    const int g = matcher.Next(i, ctx.InputName("X", i));
    if (g >= 0) {
      const Shape shape = x.shape();  // X@GRAD is never X, but copy before allocating anyway
      Tensor* dx = ctx.Output(GradVarName("X"), g);
      dx->Allocate(dtype, shape);
      char* dst = static_cast<char*>(dx->raw_data());
      if (dout == nullptr) {
        if (row * outer > 0) std::memset(dst, 0, row * outer);
      } else if (row > 0) {
        for (int64_t o = 0; o < outer; ++o) {
          std::memcpy(dst + o * row, dout + o * out_row + offset, row);
        }
      }
    }
    offset += row;
  }
}

void ConcatGradShape(ShapeContext& ctx) {
  const proto::Slot* grads = FindSlot(ctx.op().outputs(), GradVarName("X"));
  if (grads == nullptr) return;
  const int n = ctx.InputCount("X");
  GradMatcher matcher(n, grads);
  for (int i = 0; i < n; ++i) {
    const int g = matcher.Next(i, ctx.InputName("X", i));
    if (g >= 0) ctx.SetOutput(GradVarName("X"), ctx.InputShape("X", i), ctx.InputType("X", i), g);
  }
}

}  // namespace

RILL_REGISTER_OP(concat,
                 OpSchema("concat")
                     .Doc("Out = the X tensors joined along axis.")
                     .Input("X", "tensors of equal shape except along axis", kDuplicable)
                     .Output("Out", "the joined tensor")
                     .Attr("axis", 0, "the axis to join along (negative counts from the end)")
                     .InferShape(ConcatShape)
                     .CpuKernel(ConcatKernel)
                     .DefaultGrad());

RILL_REGISTER_OP(concat_grad,
                 OpSchema("concat_grad")
                     .Doc("X@GRAD[i] = the part of Out@GRAD that X[i] filled.")
                     .Input("X", "the forward inputs", kDuplicable | kNoGradient)
                     .Input("Out", "the forward output (unused)", kOptional | kNoGradient)
                     .Input("Out@GRAD", "gradient of Out", kOptional)
                     .Output("X@GRAD", "gradients of the inputs that need one",
                             kDuplicable | kOptional)
                     .Attr("axis", 0, "the forward axis")
                     .InferShape(ConcatGradShape)
                     .CpuKernel(ConcatGradKernel));

}  // namespace rill
