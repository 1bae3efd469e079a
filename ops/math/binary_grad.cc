#include "ops/math/binary_grad.h"

#include <vector>

#include "rill/op_desc.h"

namespace rill {

GradMakerFn BinaryGradMaker(const std::string& grad_type, bool one_op_per_input) {
  return [grad_type, one_op_per_input](const proto::OpDesc& fwd) {
    proto::OpDesc grad;
    grad.set_type(grad_type);
    const std::string x = InputVar(fwd, "X");
    const std::string y = InputVar(fwd, "Y");
    SetInput(&grad, "X", {x});
    SetInput(&grad, "Y", {y});
    SetInput(&grad, "Out@GRAD", {GradVarName(OutputVar(fwd, "Out"))});
    *grad.mutable_attrs() = fwd.attrs();
    if (!one_op_per_input) {
      SetOutput(&grad, "X@GRAD", {GradVarName(x)});
      SetOutput(&grad, "Y@GRAD", {GradVarName(y)});
      return std::vector<proto::OpDesc>{grad};
    }
    proto::OpDesc dx = grad;
    SetOutput(&dx, "X@GRAD", {GradVarName(x)});
    SetOutput(&grad, "Y@GRAD", {GradVarName(y)});
    return std::vector<proto::OpDesc>{dx, grad};
  };
}

}  // namespace rill
