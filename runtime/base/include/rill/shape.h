// Tensor shapes: a list of dimension sizes. In variable declarations -1 marks
// a dimension known only at run time (the batch); run-time shapes are >= 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rill {

using Shape = std::vector<int64_t>;

// Product of the dimensions; 1 for a scalar (rank 0). Throws on negative dims.
int64_t NumElements(const Shape& shape);
// "[64, 784]"
std::string ShapeToString(const Shape& shape);
// True when the shapes agree, with -1 in either matching anything.
bool ShapesCompatible(const Shape& a, const Shape& b);
// Product of dims [begin, end). Throws kInvalidArgument on an unknown (-1)
// dim and kOutOfRange when the product does not fit in int64.
int64_t DimProduct(const Shape& shape, int begin, int end);
// a * b for sizes (>= 0); throws kOutOfRange naming `what` on overflow.
int64_t CheckedMultiply(int64_t a, int64_t b, const char* what = "element count");

}  // namespace rill
