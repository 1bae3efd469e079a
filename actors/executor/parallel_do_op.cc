// parallel_do and parallel_do_grad: run a sub-block on several places, each on
// a slice of the inputs. Protocol ops: the actor executor runs them with a
// block runner (block_runner.h); the reference executor reports it cannot.
#include "rill/op_registry.h"

namespace rill {

RILL_REGISTER_OP(
    parallel_do,
    OpSchema("parallel_do")
        .Doc("Runs sub_block on `places` places, each on a slice (along dim 0) of Inputs; "
             "Outputs are the places' outputs concatenated in place order. Parameters the "
             "block reads are shared by the places.")
        .Input("Inputs", "split along dim 0, one slice per place", kDuplicable)
        .Output("Outputs", "concatenated along dim 0", kDuplicable)
        .RequiredAttr("sub_block", AttrType::kBlock, "the block each place runs")
        .Attr("places", 1, "how many places", AtLeast(1))
        .GradBlock("sub_block"));

RILL_REGISTER_OP(
    parallel_do_grad,
    OpSchema("parallel_do_grad")
        .Doc("Runs sub_block (the gradient of forward_block) on each place with its slice of "
             "Outputs@GRAD, in the scopes the forward run left; Inputs@GRAD are concatenated, "
             "Params@GRAD summed over the places.")
        .Input("Inputs", "the forward inputs", kDuplicable)
        .Input("Outputs@GRAD", "gradients of the forward outputs", kDuplicable | kOptional)
        .Output("Inputs@GRAD", "gradients of the inputs", kDuplicable | kOptional)
        .Output("Params@GRAD", "gradients of the parameters the block reads, summed",
                kDuplicable | kOptional)
        .RequiredAttr("sub_block", AttrType::kBlock, "the gradient block")
        .RequiredAttr("forward_block", AttrType::kBlock, "the forward block")
        .Attr("places", 1, "how many places", AtLeast(1))
        .Attr("input_grads", std::vector<std::string>{},
              "names the gradient block writes the inputs' gradients under")
        .Attr("param_grads", std::vector<std::string>{},
              "names the gradient block writes the parameters' gradients under"));

}  // namespace rill
