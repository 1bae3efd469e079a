// Float attributes and scalars widened to double as the user wrote them.
#pragma once

namespace rill {

// A float32 such as 0.001f stands for the decimal 0.001: widening it through
// its shortest decimal form gives the double a Python user would have written.
double DecimalDouble(float f);

}  // namespace rill
