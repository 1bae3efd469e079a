#include "ops/tensor/fill_constant_util.h"

#include <string>
#include <vector>

#include "ops/decimal_double.h"

namespace rill {

FillConstantAttrs ReadFillConstantAttrs(const KernelContext& ctx) {
  const Shape shape = ctx.Attr<std::vector<int64_t>>("shape");
  for (int64_t d : shape) {
    RILL_CHECK(d >= 0, kInvalidArgument, "shape ", ShapeToString(shape), " has a negative dim");
  }
  const DataType dtype = ParseDataType(ctx.Attr<std::string>("dtype"));
  return {shape, dtype, DecimalDouble(ctx.Attr<float>("value"))};
}

}  // namespace rill
