// while and while_grad. A while loop runs its body block while Condition
// holds, in one scope of its own (a child of the op's). Like the CSP ops its
// kernel blocks (the actor executor runs it on its fiber pool) and is a
// barrier of its block.
//
// The gradient (runtime/program/while_backward.h rewrites the body first):
// the loop variables — outer variables the body writes — are read in the body
// through step-local copies ("<v>@IN", shared with the outer value before
// each pass) and written once, by the assigns at its end. The loop then
// records every pass's local values in its StepScopes variable; while_grad
// runs the gradient block over the passes in reverse, each in the values its
// pass left, summing the gradients of what the body reads from outside and
// handing each loop variable's gradient from one pass to the one before.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rill/error.h"
#include "rill/executor.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

// The values of a loop body's variables after each pass.
class StepScopes : public VarObject {
 public:
  explicit StepScopes(std::vector<std::string> names) : names_(std::move(names)) {}
  std::string Describe() const override {
    return StrCat("the ", passes_.size(), " recorded pass(es) of a while loop");
  }
  const std::vector<std::string>& names() const { return names_; }
  size_t passes() const { return passes_.size(); }

  // Shares the tensors (no copy): the next pass allocates its own, as kernels
  // never write into a buffer another tensor views.
  void Record(const Scope& scope) {
    std::vector<Tensor>& pass = passes_.emplace_back();
    pass.reserve(names_.size());
    for (const auto& name : names_) pass.push_back(scope.FindLocalVar(name)->tensor());
  }
  void Restore(size_t pass, Scope* scope) const {
    for (size_t k = 0; k < names_.size(); ++k) {
      *scope->FindLocalVar(names_[k])->mutable_tensor() = passes_[pass][k];
    }
  }
  void Clear() { passes_.clear(); }

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<Tensor>> passes_;
};

bool ConditionHolds(const Tensor& cond, const std::string& name) {
  RILL_CHECK(cond.initialized() && cond.numel() == 1, kInvalidArgument, "while condition \"", name,
             "\" must hold one element, holds ", cond.initialized() ? cond.Describe() : "nothing");
  return cond.GetAsDouble(0) != 0;
}

// A scope for block `block` under the op's, with every variable the block
// declares made its own: names it shares with outer variables (a gradient
// block's "W@GRAD") must not write those.
std::shared_ptr<Scope> BlockScope(Scope* parent, const proto::BlockDesc& block) {
  std::shared_ptr<Scope> scope = Scope::MakeLocal(parent);
  for (const auto& var : block.vars()) scope->Var(var.name());
  return scope;
}

std::vector<std::string> DenseVars(const proto::BlockDesc& block) {
  std::vector<std::string> names;
  for (const auto& var : block.vars()) {
    if (var.kind() == proto::DENSE_TENSOR) names.push_back(var.name());
  }
  return names;
}

std::vector<std::string> StringsAttr(const KernelContext& ctx, const std::string& name) {
  return ctx.Attr<std::vector<std::string>>(name);
}

void WhileKernel(KernelContext& ctx) {
  const int block = BlockAttr(ctx.op(), "sub_block");
  const std::string& cond_name = ctx.InputName("Condition");
  Variable* cond = ctx.InputVar("Condition");
  const std::vector<std::string> loop_vars = StringsAttr(ctx, "loop_vars");
  const std::vector<std::string> inputs = StringsAttr(ctx, "loop_var_inputs");
  RILL_CHECK(inputs.size() == loop_vars.size(), kInvalidArgument, "while: ", loop_vars.size(),
             " loop_vars but ", inputs.size(), " loop_var_inputs");
  const proto::BlockDesc& body_desc = ctx.run().program().blocks(block);
  // A recorded loop (one being differentiated) owns every variable of its
  // body; otherwise, as in go blocks, a name the body declares again is the
  // outer variable. Shared: a go block started in the body may outlive the loop.
  std::shared_ptr<StepScopes> steps;
  std::shared_ptr<Scope> local;
  if (ctx.HasOutput("StepScopes")) {
    steps = std::make_shared<StepScopes>(DenseVars(body_desc));
    ctx.OutputVar("StepScopes")->set_object(steps);
    local = BlockScope(ctx.scope(), body_desc);
  } else {
    local = Scope::MakeLocal(ctx.scope());
  }
  // Each loop variable read by the body: its outer value and the body's copy.
  struct Copy {
    const std::string* name;
    const Variable* outer;
    Variable* copy;
  };
  std::vector<Copy> copies;
  for (size_t k = 0; k < loop_vars.size(); ++k) {
    if (inputs[k].empty()) continue;
    const Variable* outer = ctx.scope()->FindVar(loop_vars[k]);
    RILL_CHECK(outer != nullptr, kNotFound, "while: loop variable \"", loop_vars[k],
               "\" is not in the scope");
    copies.push_back({&loop_vars[k], outer, local->Var(inputs[k])});
  }
  Executor executor(ctx.place());
  auto body = executor.PrepareSubBlock(ctx.run(), local.get(), block);
  while (ConditionHolds(cond->tensor(), cond_name)) {
    for (const Copy& c : copies) {
      RILL_CHECK(c.outer->tensor().initialized(), kInvalidArgument, "while: loop variable \"",
                 *c.name, "\" holds no value before a pass");
      *c.copy->mutable_tensor() = c.outer->tensor();
    }
    executor.Run(*body);
    if (steps) steps->Record(*local);
  }
}

// dst += src, elementwise (same type and shape).
void AddInto(Tensor* dst, const Tensor& src, const std::string& what) {
  RILL_CHECK(dst->dtype() == src.dtype() && dst->shape() == src.shape(), kInvalidArgument,
             "while_grad: the gradient ", what, " is ", src.Describe(), " in one pass and ",
             dst->Describe(), " in another");
  VisitDataType(src.dtype(), [&]<class T>() {
    T* d = dst->mutable_data<T>();
    const T* s = src.data<T>();
    for (int64_t i = 0, n = src.numel(); i < n; ++i) d[i] += s[i];
  });
}

void ZerosLike(Tensor* out, const Tensor& like) {
  out->Allocate(like.dtype(), like.shape());
  out->Fill(0);
}

const Tensor& ForwardValue(const KernelContext& ctx, const std::string& name) {
  const Variable* var = ctx.scope()->FindVar(name);
  RILL_CHECK(var != nullptr && var->tensor().initialized(), kInvalidArgument, "while_grad: \"",
             name, "\" holds no value (did the loop run?)");
  return var->tensor();
}

void WhileGradKernel(KernelContext& ctx) {
  const int grad_block = BlockAttr(ctx.op(), "sub_block");
  const int forward_block = BlockAttr(ctx.op(), "forward_block");
  auto* steps = dynamic_cast<StepScopes*>(ctx.InputVar("StepScopes")->object().get());
  RILL_CHECK(steps != nullptr, kInvalidArgument, "while_grad: StepScopes (",
             ctx.InputName("StepScopes"), ") holds no recorded passes: run the while op first");
  const std::vector<std::string> loop_vars = StringsAttr(ctx, "loop_vars");
  const std::vector<std::string> pass_grads = StringsAttr(ctx, "loop_var_input_grads");
  const std::vector<std::string> grads = StringsAttr(ctx, "grads");
  const int loop_count = ctx.OutputCount("LoopVars@GRAD");
  RILL_CHECK(
      static_cast<int>(loop_vars.size()) == loop_count && pass_grads.size() == loop_vars.size() &&
          static_cast<int>(grads.size()) == ctx.OutputCount("Grads"),
      kInvalidArgument, "while_grad: attributes name ", loop_vars.size(), " loop variable(s) and ",
      grads.size(), " gradient(s); the op binds ", loop_count, " and ", ctx.OutputCount("Grads"));

  for (int k = 0; k < loop_count; ++k) {
    RILL_CHECK(ctx.Output("LoopVars@GRAD", k)->initialized(), kInvalidArgument,
               "while_grad: the gradient of loop variable ", loop_vars[static_cast<size_t>(k)],
               " holds no value");
  }
  std::shared_ptr<Scope> body = BlockScope(ctx.scope(), ctx.run().program().blocks(forward_block));
  std::shared_ptr<Scope> scope = BlockScope(body.get(), ctx.run().program().blocks(grad_block));
  Executor executor(ctx.place());
  auto prepared = executor.PrepareSubBlock(ctx.run(), scope.get(), grad_block);
  const size_t passes = steps->passes();
  for (size_t p = passes; p-- > 0;) {
    steps->Restore(p, body.get());
    executor.Run(*prepared);
    for (size_t k = 0; k < grads.size(); ++k) {
      const Variable* inner = scope->FindLocalVar(grads[k]);
      RILL_CHECK(inner != nullptr && !inner->holds_selected_rows(), kUnimplemented,
                 "while_grad: the gradient ", grads[k],
                 " is sparse (selected rows); a table looked up in a while body needs "
                 "is_sparse off");
      RILL_CHECK(inner->tensor().initialized(), kInvalidArgument, "while_grad: pass ", p,
                 " left no gradient ", grads[k]);
      Tensor* out = ctx.Output("Grads", static_cast<int>(k));
      if (p + 1 == passes) {
        out->CopyFrom(inner->tensor());
      } else {
        AddInto(out, inner->tensor(), grads[k]);
      }
    }
    // The gradient of a loop variable before this pass: of its step-local copy.
    for (int k = 0; k < loop_count; ++k) {
      const std::string& inner_name = pass_grads[static_cast<size_t>(k)];
      const Variable* inner = inner_name.empty() ? nullptr : scope->FindLocalVar(inner_name);
      Tensor* g = ctx.Output("LoopVars@GRAD", k);
      if (inner != nullptr && inner->tensor().initialized()) {
        g->CopyFrom(inner->tensor());
      } else {
        g->Fill(0);  // the pass wrote the variable without reading it
      }
    }
  }
  if (passes == 0) {  // no pass: nothing the body reads has a gradient
    for (size_t k = 0; k < grads.size(); ++k) {
      const std::string forward =
          grads[k].substr(0, grads[k].size() - std::string_view(kGradSuffix).size());
      ZerosLike(ctx.Output("Grads", static_cast<int>(k)), ForwardValue(ctx, forward));
    }
  }
  steps->Clear();  // the passes' values are not needed again
}

}  // namespace

RILL_REGISTER_OP(while,
                 OpSchema("while")
                     .Doc("Runs sub_block while Condition (one element) is non-zero; the block "
                          "updates Condition.")
                     .Input("Condition", "one element, read before each pass", kNoGradient)
                     .Input("X", "variables the block reads (documentation; optional)",
                            kOptional | kDuplicable | kNoGradient)
                     .Output("StepScopes",
                             "each pass's values, for while_grad (set by AppendBackward)",
                             kOptional | kNoGradient)
                     .RequiredAttr("sub_block", AttrType::kBlock, "the loop body")
                     .Attr("loop_vars", std::vector<std::string>{},
                           "outer variables the body writes (set by AppendBackward)")
                     .Attr("loop_var_inputs", std::vector<std::string>{},
                           "per loop variable, the body's copy of it made before each pass "
                           "(empty: none)")
                     .CpuKernel(WhileKernel)
                     .GradBlock("sub_block")
                     .Blocking()
                     .Barrier());

RILL_REGISTER_OP(
    while_grad,
    OpSchema("while_grad")
        .Doc("Runs sub_block (the gradient of the loop body forward_block) once per recorded "
             "pass, last first, in the values that pass left; sums Grads over the passes and "
             "hands LoopVars@GRAD from each pass to the one before.")
        .Input("X", "what the forward loop read (documentation)",
               kOptional | kDuplicable | kNoGradient)
        .Input("StepScopes", "the forward loop's recorded passes", kNoGradient)
        .Input("LoopVars@GRAD", "gradients of the loop variables after the loop",
               kOptional | kDuplicable | kNoGradient)
        .Output("LoopVars@GRAD", "their gradients before the loop (the same variables)",
                kOptional | kDuplicable | kNoGradient)
        .Output("Grads", "gradients of what the body reads from outside, summed over passes",
                kOptional | kDuplicable | kNoGradient)
        .RequiredAttr("sub_block", AttrType::kBlock, "the gradient block")
        .RequiredAttr("forward_block", AttrType::kBlock, "the loop body")
        .Attr("loop_vars", std::vector<std::string>{}, "per LoopVars@GRAD, the loop variable")
        .Attr("loop_var_input_grads", std::vector<std::string>{},
              "per LoopVars@GRAD, the gradient block's name for the gradient of the body's "
              "copy (empty: the body does not read it)")
        .Attr("grads", std::vector<std::string>{},
              "per Grads entry, the gradient block's name for it")
        .CpuKernel(WhileGradKernel)
        .Blocking());

}  // namespace rill
