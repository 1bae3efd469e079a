// Helpers of the tests that train a model on several executors or places and
// compare the parameters they end with, or compare tensors that travelled.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rill/tensor.h"

namespace rill::testing {

// int64 labels [batch, 1] that cycle through the classes: (3 i + step) % classes.
Tensor CyclicLabels(int64_t batch, int step, int classes);

// EXPECTs want[i] and got[i] to hold the same bytes (host memory), naming
// `what` and the parameter index on a difference.
void ExpectBitEqual(const std::vector<Tensor>& want, const std::vector<Tensor>& got,
                    const std::string& what);

// ||got - want|| / ||want|| (L2 norms over all elements, host memory); also
// printed, with the largest element difference over the largest value.
double RelativeDifference(const Tensor& got, const Tensor& want);

// Whether a and b have the same dtype, shape and bytes (host memory).
bool BitEqual(const Tensor& a, const Tensor& b);

// EXPECTs `actual` to hold a value of expected's dtype and shape with the
// same bytes (host memory).
void ExpectSameTensor(const Tensor& actual, const Tensor& expected);

}  // namespace rill::testing
