// The input checks of less_than (less_than_check.h).
#include "ops/math/less_than_check.h"

#include "rill/error.h"

namespace rill {

void CheckLessThanInputs(const Tensor& x, const Tensor& y) {
  RILL_CHECK(y.numel() == 1 || y.shape() == x.shape(), kInvalidArgument, "less_than: Y ",
             y.Describe(), " must have X's shape ", ShapeToString(x.shape()), " or one element");
  RILL_CHECK(x.dtype() == y.dtype(), kInvalidArgument, "less_than: X is ", x.Describe(), ", Y is ",
             y.Describe());
}

}  // namespace rill
