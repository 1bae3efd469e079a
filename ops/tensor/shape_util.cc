#include "ops/tensor/shape_util.h"

#include <string_view>

#include "rill/op_desc.h"

namespace rill {
namespace {

// True when `grad` is the gradient variable of `var`: "var@GRAD", or, with
// `renamed`, the "var@GRAD@RENAME@n" that append_backward writes for a second
// contribution.
bool IsGradOf(std::string_view grad, std::string_view var, bool renamed) {
  const std::string_view suffix = kGradSuffix;
  constexpr std::string_view kRename = "@RENAME@";
  if (grad.size() < var.size() + suffix.size() || grad.substr(0, var.size()) != var ||
      grad.substr(var.size(), suffix.size()) != suffix) {
    return false;
  }
  grad.remove_prefix(var.size() + suffix.size());
  return grad.empty() || (renamed && grad.substr(0, kRename.size()) == kRename);
}

const proto::Slot* FindSlot(const google::protobuf::RepeatedPtrField<proto::Slot>& slots,
                            const std::string& name) {
  for (const auto& s : slots) {
    if (s.name() == name) return &s;
  }
  return nullptr;
}

// `axis` in [-rank, rank) as an index in [0, rank).
int NormalizeAxis(int axis, int rank, const char* rank_message) {
  RILL_CHECK(rank >= 1, kInvalidArgument, rank_message);
  RILL_CHECK(axis >= -rank && axis < rank, kInvalidArgument, "axis ", axis,
             " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

}  // namespace

int ConcatAxis(int axis, int rank) {
  return NormalizeAxis(axis, rank, "concat needs inputs of rank >= 1");
}

int SplitAxis(int axis, int rank) {
  return NormalizeAxis(axis, rank, "split needs X of rank >= 1");
}

Shape ConcatOutShape(const KernelContext& ctx, int axis) {
  const int n = ctx.InputCount("X");
  const Tensor& first = ctx.Input("X", 0);
  const int rank = first.rank();
  const DataType dtype = first.dtype();
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
  return out_shape;
}

void CheckPermutation(const std::vector<int64_t>& perm, size_t rank) {
  RILL_CHECK(perm.size() == rank, kInvalidArgument, "axis ", ShapeToString(perm), " has ",
             perm.size(), " entries but X has rank ", rank);
  RILL_CHECK(rank <= kMaxTransposeRank, kUnimplemented, "transpose supports rank up to ",
             kMaxTransposeRank, ", X has rank ", rank);
  bool seen[kMaxTransposeRank] = {};
  for (int64_t a : perm) {
    RILL_CHECK(a >= 0 && a < static_cast<int64_t>(rank) && !seen[a], kInvalidArgument, "axis ",
               ShapeToString(perm), " is not a permutation of 0..", rank - 1);
    seen[a] = true;
  }
}

Shape ResolveReshape(const Shape& in, const std::vector<int64_t>& spec) {
  Shape out(spec.size(), -1);
  int infer_at = -1;
  int64_t known_out = 1;   // product of the known dims of Out, except the inferred one
  int copied_unknown = 0;  // unknown dims of X that a 0 copies into Out
  for (size_t i = 0; i < spec.size(); ++i) {
    const int64_t s = spec[i];
    if (s == -1) {
      RILL_CHECK(infer_at < 0, kInvalidArgument, "shape ", ShapeToString(spec),
                 " has more than one -1");
      infer_at = static_cast<int>(i);
    } else if (s == 0) {
      RILL_CHECK(i < in.size(), kInvalidArgument, "shape ", ShapeToString(spec), " has 0 at index ",
                 i, ", but X ", ShapeToString(in), " has no dim there to copy");
      out[i] = in[i];
      if (in[i] < 0) {
        ++copied_unknown;
      } else {
        known_out = CheckedMultiply(known_out, in[i]);
      }
    } else {
      RILL_CHECK(s > 0, kInvalidArgument, "shape ", ShapeToString(spec), " has dim ", s,
                 " (dims must be > 0, 0 to copy or -1 to infer)");
      out[i] = s;
      known_out = CheckedMultiply(known_out, s);
    }
  }
  int64_t known_in = 1;
  int unknown_in = 0;
  for (int64_t d : in) {
    if (d < 0) {
      ++unknown_in;
    } else {
      known_in = CheckedMultiply(known_in, d);
    }
  }
  // Unknown dims of X copied by a 0 cancel out; any other leaves the count unknown.
  if (unknown_in != copied_unknown) return out;
  if (infer_at >= 0) {
    RILL_CHECK(known_out > 0 && known_in % known_out == 0, kInvalidArgument, "cannot reshape X ",
               ShapeToString(in), " to ", ShapeToString(spec), ": ", known_in,
               " elements do not divide into dims of product ", known_out);
    out[static_cast<size_t>(infer_at)] = known_in / known_out;
  } else {
    RILL_CHECK(known_in == known_out, kInvalidArgument, "cannot reshape X ", ShapeToString(in),
               " to ", ShapeToString(spec), ": element counts differ (", known_in, " vs ",
               known_out, ")");
  }
  return out;
}

Tensor ReshapeView(const KernelContext& ctx) {
  const Tensor& x = ctx.Input("X");
  return x.Reshaped(ResolveReshape(x.shape(), ctx.Attr<std::vector<int64_t>>("shape")));
}

Tensor* ReshapeGradOrZeros(KernelContext& ctx, Place place) {
  if (!ctx.HasOutput("X@GRAD")) return nullptr;
  const Tensor& x = ctx.Input("X");
  const Shape shape = x.shape();
  Tensor* dx = ctx.Output("X@GRAD");
  if (!ctx.InputReady("Out@GRAD")) {
    dx->Allocate(x.dtype(), shape, place);
    return dx;
  }
  const Tensor& dout = ctx.Input("Out@GRAD");
  RILL_CHECK(dout.numel() == NumElements(shape) && dout.dtype() == x.dtype(), kInvalidArgument,
             "Out@GRAD ", dout.Describe(), " does not match X ", x.Describe());
  *dx = dout.Reshaped(shape);
  return nullptr;
}

std::vector<int64_t> SplitPartSizes(int64_t dim, int num, const std::vector<int64_t>& sections,
                                    int outputs) {
  if (!sections.empty()) {
    RILL_CHECK(num == 0, kInvalidArgument, "give num or sections, not both (num ", num,
               ", sections ", ShapeToString(sections), ")");
    RILL_CHECK(static_cast<int>(sections.size()) == outputs, kInvalidArgument, "sections ",
               ShapeToString(sections), " has ", sections.size(), " parts but Out has ", outputs);
    std::vector<int64_t> sizes = sections;
    int infer_at = -1;
    int64_t sum = 0;
    for (size_t k = 0; k < sizes.size(); ++k) {
      if (sizes[k] == -1) {
        RILL_CHECK(infer_at < 0, kInvalidArgument, "sections ", ShapeToString(sections),
                   " has more than one -1");
        infer_at = static_cast<int>(k);
      } else {
        RILL_CHECK(sizes[k] >= 0, kInvalidArgument, "sections ", ShapeToString(sections),
                   " has a negative size");
        sum += sizes[k];
      }
    }
    if (dim < 0) return sizes;
    if (infer_at >= 0) {
      RILL_CHECK(sum <= dim, kInvalidArgument, "sections ", ShapeToString(sections), " exceed dim ",
                 dim, " of the axis");
      sizes[static_cast<size_t>(infer_at)] = dim - sum;
    } else {
      RILL_CHECK(sum == dim, kInvalidArgument, "sections ", ShapeToString(sections), " sum to ",
                 sum, " but the axis has ", dim);
    }
    return sizes;
  }
  const int parts = num > 0 ? num : outputs;
  RILL_CHECK(parts == outputs && parts >= 1, kInvalidArgument, "num is ", num, " but Out has ",
             outputs, " variables");
  RILL_CHECK(dim < 0 || dim % parts == 0, kInvalidArgument, "dim ", dim,
             " of the axis does not divide into ", parts, " equal parts");
  return std::vector<int64_t>(static_cast<size_t>(parts), dim < 0 ? -1 : dim / parts);
}

ConcatGradMatcher::ConcatGradMatcher(const proto::OpDesc& op, int inputs)
    : grads_(FindSlot(op.outputs(), GradVarName("X"))),
      positional_(grads_ != nullptr && grads_->vars_size() == inputs) {}

int ConcatGradMatcher::Next(int i, const std::string& name) {
  if (grads_ == nullptr) return -1;
  if (positional_) return i;
  if (next_ < grads_->vars_size() && IsGradOf(grads_->vars(next_), name, /*renamed=*/true)) {
    return next_++;
  }
  return -1;
}

SplitGradMatcher::SplitGradMatcher(const KernelContext& ctx)
    : ctx_(ctx), parts_(ctx.InputCount("Out")), grads_(ctx.InputCount("Out@GRAD")) {}

int SplitGradMatcher::Next(int k) {
  if (grads_ == parts_) return k;
  if (next_ < grads_ &&
      IsGradOf(ctx_.InputName("Out@GRAD", next_), ctx_.InputName("Out", k), /*renamed=*/false)) {
    return next_++;
  }
  return -1;
}

}  // namespace rill
