// The gradient op of a two-input op Out = f(X, Y) whose gradient needs X, Y
// and Out@GRAD (not Out): elementwise ops, mul, matmul.
#pragma once

#include <string>

#include "rill/op_schema.h"

namespace rill {

// Makes "<grad_type>" ops reading X, Y and Out@GRAD, with the forward op's
// attributes: one op writing X@GRAD and Y@GRAD, or, with one_op_per_input,
// one op per gradient so that the two can be computed at the same time.
GradMakerFn BinaryGradMaker(const std::string& grad_type, bool one_op_per_input);

}  // namespace rill
