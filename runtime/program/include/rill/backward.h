// append_backward: extends a program with the gradient ops of everything the
// loss depends on, as Fluid does.
//
// Walking the forward ops in reverse, each op on a path from a trainable
// parameter to the loss contributes the ops its schema's grad maker returns.
// Gradients are named "<var>@GRAD". A variable read by several ops gets one
// contribution per reader, summed in place into its gradient. Gradients of
// variables that need none (data, labels, stop_gradient) are never computed;
// an output gradient nobody produced is left unbound, which kernels read as zero.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "rill/program.h"

namespace rill {

struct ParamGrad {
  std::string param;
  std::string grad;
};

// Appends "loss@GRAD = 1" and the gradient ops to block 0 of `program`.
// Returns the (parameter, gradient) pairs of every trainable parameter the
// loss depends on, in parameter declaration order. Throws kInvalidArgument if
// the loss is not a one-element float variable, or kUnimplemented naming the
// op if an op on the path has no gradient.
std::vector<ParamGrad> AppendBackward(Program* program, const std::string& loss,
                                      const std::set<std::string>& no_grad = {});

}  // namespace rill
