// pool2d's most common window, 2x2 at stride 2 without padding (the halving
// after a convolution), swept row pair by row pair with no bounds tests: the
// general kernel's per-window spans and argmax scans cost it 1.8 ms per step
// on the CNN's first pool. Same results, bit for bit, as the general kernel:
// the same comparisons in the same order (the first largest wins, NaN never
// displaces a number), sums from zero in row-major order, and every gradient
// cell written as 0 + its share.
#pragma once

#include "ops/nn/window2d.h"

namespace rill {

// Whether `g` is the 2x2, stride 2, unpadded window these kernels handle.
bool IsPool2x2(const PoolGeometry& g);

// Out of the batch * channels planes of `x` (g.height x g.width each).
template <class T>
void Pool2x2Forward(const PoolGeometry& g, const T* x, T* out);

// X@GRAD of the same planes: every cell written (a row or column left over by
// an odd size gets 0), so `dx` needs no clearing first. `x` only for max.
template <class T>
void Pool2x2Backward(const PoolGeometry& g, const T* x, const T* dout, T* dx);

}  // namespace rill
