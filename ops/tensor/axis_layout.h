// How concat's inputs and split's outputs sit along the axis of the tensor
// they make up (concat's Out, split's X), in bytes, read with the kernels'
// checks of the inputs and gradients: one code for the CPU kernels
// (concat_op.cc, split_op.cc) and the CUDA ones (shape_op_cuda.cc), which
// only move the bytes, so every place throws the same errors. The joined
// tensor is `outer` rows (the product of the dims before the axis), each
// holding the parts' rows side by side.
#pragma once

#include <cstdint>
#include <vector>

#include "rill/kernel_context.h"

namespace rill {

struct AxisLayout {
  DataType dtype = DataType::kFloat32;
  Shape joined_shape;              // concat's Out (not for concat_grad), split's X
  std::vector<Shape> part_shapes;  // concat's X[i], split's Out[k]
  int64_t outer = 0;
  int64_t joined_row = 0;             // bytes of the joined tensor per row
  std::vector<int64_t> part_rows;     // bytes of part i per row
  std::vector<int64_t> part_offsets;  // where part i starts in a joined row
  int parts() const { return static_cast<int>(part_rows.size()); }
};

// concat's. Throws kInvalidArgument without inputs, for an axis out of
// range, or when an input does not match X[0] (ConcatOutShape).
AxisLayout ConcatLayoutOf(const KernelContext& ctx);

// concat_grad's inputs.
struct ConcatGrads {
  AxisLayout layout;            // of the X inputs, joined_shape left empty
  std::vector<int> grad_index;  // X@GRAD's index for each X[i], -1: none
  const char* dout = nullptr;   // Out@GRAD's data; null when absent (zeros)
};
// Reads them (nothing when X@GRAD is bound to no variable: no parts).
// Throws kInvalidArgument for a bad axis or unless Out@GRAD has X[0]'s type
// and the inputs' bytes.
ConcatGrads ReadConcatGrads(const KernelContext& ctx);

// split's, for its Out variables (SplitAxis' and SplitPartSizes' checks).
AxisLayout SplitLayoutOf(const KernelContext& ctx);

// split_grad's inputs.
struct SplitGrads {
  AxisLayout layout;              // of the forward Out variables in X
  std::vector<const char*> dout;  // each part's gradient data; null: zeros
};
// Reads them; throws kInvalidArgument as SplitLayoutOf does, without
// forward Out variables, or when a part's gradient does not have X's type
// and the part's bytes.
SplitGrads ReadSplitGrads(const KernelContext& ctx);

// The CPU kernels' copies, in host memory: part i into its place in
// `joined` (a null `part`: zeros), and out of it (a null `joined`: zeros).
void CopyPartIn(const AxisLayout& layout, int i, const void* part, void* joined);
void CopyPartOut(const AxisLayout& layout, int i, const void* joined, void* part);

}  // namespace rill
