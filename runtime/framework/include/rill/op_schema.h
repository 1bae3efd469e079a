// OpSchema: everything Rill knows about an op type — its input and output
// slots, its attributes (with defaults and checks), shape inference, kernels
// per place, and how to make its gradient ops. Ops register one schema each,
// in one readable block at the bottom of their file:
//
//   RILL_REGISTER_OP(scale, OpSchema("scale")
//       .Doc("Out = scale * X + bias")
//       .Input("X", "input tensor")
//       .Output("Out", "result, same shape as X")
//       .Attr("scale", 1.0f, "the multiplier")
//       .InferShape(SameShapeAs("X", "Out"))
//       .CpuKernel(ScaleKernel)
//       .Grad(ScaleGradMaker));
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rill/place.h"
#include "rill/proto/program.pb.h"

namespace rill {

class ShapeContext;
class KernelContext;

enum class AttrType { kBool, kInt, kFloat, kString, kInts, kFloats, kStrings, kBlock, kBlocks };
const char* AttrTypeName(AttrType type);

// Flags of a slot, combined with |.
enum SlotFlag : unsigned {
  kRequired = 0,
  kOptional = 1u << 0,    // may be absent or empty
  kDuplicable = 1u << 1,  // may hold several variables (e.g. sum's X)
  kNoGradient = 1u << 2,  // no gradient flows through it (labels, indices)
};

struct SlotSpec {
  std::string name;
  std::string doc;
  unsigned flags = kRequired;
  bool optional() const { return flags & kOptional; }
  bool duplicable() const { return flags & kDuplicable; }
  bool differentiable() const { return !(flags & kNoGradient); }
};

// Returns an empty string when the value is acceptable, else why it is not.
using AttrCheck = std::function<std::string(const proto::Attr&)>;

struct AttrSpec {
  std::string name;
  std::string doc;
  AttrType type = AttrType::kInt;
  std::optional<proto::Attr> default_value;  // absent: the attribute is required
  AttrCheck check;
  // A float attribute may be inf or nan (validation refuses them otherwise).
  bool non_finite_allowed = false;
};

using InferShapeFn = std::function<void(ShapeContext&)>;
using KernelFn = std::function<void(KernelContext&)>;
using TryKernelFn = std::function<bool(KernelContext&)>;
// Makes the gradient ops of one forward op. Gradient variables are named
// GradVarName(forward name); append_backward renames and prunes them.
using GradMakerFn = std::function<std::vector<proto::OpDesc>(const proto::OpDesc& forward)>;

class OpSchema {
 public:
  explicit OpSchema(std::string type);

  // -- declaration (builder style) -------------------------------------------
  OpSchema& Doc(std::string doc);
  OpSchema& Input(std::string name, std::string doc, unsigned flags = kRequired);
  OpSchema& Output(std::string name, std::string doc, unsigned flags = kRequired);
  // Optional attribute with a default value; check may be empty.
  OpSchema& Attr(std::string name, bool default_value, std::string doc);
  OpSchema& Attr(std::string name, int default_value, std::string doc, AttrCheck check = {});
  OpSchema& Attr(std::string name, float default_value, std::string doc, AttrCheck check = {});
  OpSchema& Attr(std::string name, const char* default_value, std::string doc,
                 AttrCheck check = {});
  OpSchema& Attr(std::string name, std::vector<int64_t> default_value, std::string doc,
                 AttrCheck check = {});
  OpSchema& Attr(std::string name, std::vector<float> default_value, std::string doc,
                 AttrCheck check = {});
  OpSchema& Attr(std::string name, std::vector<std::string> default_value, std::string doc,
                 AttrCheck check = {});
  // Attribute that every op of this type must set.
  OpSchema& RequiredAttr(std::string name, AttrType type, std::string doc, AttrCheck check = {});
  // Float attribute `name` (declared before) may be inf or nan. Validation
  // refuses non-finite float attributes of every other op: for most ops they
  // only turn outputs into inf/nan, or keep a loop from ending.
  OpSchema& AllowNonFinite(const std::string& name);
  // A block attribute an op may leave out; absent, it reads as block -1 (none).
  OpSchema& OptionalBlockAttr(std::string name, std::string doc);
  OpSchema& InferShape(InferShapeFn fn);
  OpSchema& Kernel(Place::Kind place, KernelFn fn);
  OpSchema& CpuKernel(KernelFn fn) { return Kernel(Place::Kind::kCpu, std::move(fn)); }
  OpSchema& Grad(GradMakerFn fn);
  // The op runs the sub-block named by block attribute `attr`, and its
  // gradient is a block too: append_backward builds the gradient ops of the
  // sub-block into a new block and emits "<type>_grad" to run it (see backward.h).
  OpSchema& GradBlock(std::string attr);
  // Output `slot` holds selected rows (kind SELECTED_ROWS) when the bool
  // attribute `attr` is true: append_backward declares it so.
  OpSchema& SparseOutput(std::string slot, std::string attr);
  // The kernel may wait (on a channel, or for a sub-block that does): the actor
  // executor runs it on a fiber, never on a scheduler thread. `try_first`, if
  // given, is tried inline first: it does the op's work and returns true when
  // it can do so without waiting (a read whose batch is already there).
  OpSchema& Blocking(TryKernelFn try_first = {});
  // The op is a barrier in its block for the actor executor: every op before
  // it (in program order) runs before it, every op after it runs after it.
  // Channel ops and go are: what a go block shares by name is ordered by the
  // channel operations around it (as in Go), not by data dependencies.
  OpSchema& Barrier();
  // The common gradient: one op "<type>_grad" taking every forward input and
  // output and each output's gradient, producing each differentiable input's gradient.
  OpSchema& DefaultGrad();
  // Like DefaultGrad, but one "<type>_grad" op per differentiable input, each
  // computing only that input's gradient: gradients of different inputs (a
  // convolution's input and filter) can then run at the same time.
  OpSchema& DefaultGradPerInput();

  // -- queries ---------------------------------------------------------------
  const std::string& type() const { return type_; }
  const std::string& doc() const { return doc_; }
  const std::vector<SlotSpec>& inputs() const { return inputs_; }
  const std::vector<SlotSpec>& outputs() const { return outputs_; }
  const std::vector<AttrSpec>& attrs() const { return attrs_; }
  const SlotSpec* FindInput(const std::string& name) const;
  const SlotSpec* FindOutput(const std::string& name) const;
  const AttrSpec* FindAttr(const std::string& name) const;
  const InferShapeFn& infer_shape() const { return infer_shape_; }
  // nullptr when no kernel is registered for that place.
  const KernelFn* FindKernel(Place::Kind place) const;
  bool has_grad() const { return static_cast<bool>(grad_maker_) || grad_block_.has_value(); }
  const std::optional<std::string>& grad_block() const { return grad_block_; }
  // Whether output `slot` of `op` (of this type) holds selected rows.
  bool OutputIsSparse(const proto::OpDesc& op, const std::string& slot) const;
  const GradMakerFn& grad_maker() const { return grad_maker_; }
  bool blocking() const { return blocking_; }
  const TryKernelFn& try_kernel() const { return try_kernel_; }
  bool barrier() const { return barrier_; }

 private:
  OpSchema& AddAttr(std::string name, AttrType type, std::optional<proto::Attr> value,
                    std::string doc, AttrCheck check);

  std::string type_;
  std::string doc_;
  std::vector<SlotSpec> inputs_;
  std::vector<SlotSpec> outputs_;
  std::vector<AttrSpec> attrs_;
  InferShapeFn infer_shape_;
  std::map<Place::Kind, KernelFn> kernels_;
  GradMakerFn grad_maker_;
  std::vector<std::pair<std::string, std::string>> sparse_outputs_;  // (slot, bool attribute)
  std::optional<std::string> grad_block_;
  bool blocking_ = false;
  TryKernelFn try_kernel_;
  bool barrier_ = false;
};

// The attribute type a proto value holds (kInt for an int, ...).
AttrType AttrTypeOf(const proto::Attr& attr);

// Common attribute checks.
AttrCheck AtLeast(int64_t min);
AttrCheck InRange(double min, double max);
AttrCheck OneOf(std::vector<std::string> allowed);

// Common shape inference: Out gets In's shape and type.
InferShapeFn SameShapeAs(std::string in, std::string out);

}  // namespace rill
