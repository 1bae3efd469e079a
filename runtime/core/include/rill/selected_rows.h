// SelectedRows: a row-sparse value, rows[i] of a [height, ...] tensor holding
// value[i] (the gradient of an embedding table touches only the looked-up
// rows). Rows may repeat; their values then add up. Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "rill/tensor.h"

namespace rill {

struct SelectedRows {
  std::vector<int64_t> rows;
  Tensor value;        // [rows.size(), ...] (the row shape of the dense tensor)
  int64_t height = 0;  // rows of the dense tensor

  bool initialized() const { return value.initialized(); }
  // The shape of the dense tensor this stands for.
  Shape DenseShape() const;
  // Each row once, in increasing order, with the values of repeats summed
  // (in the order they appear).
  SelectedRows Merged() const;
  // The dense tensor: zeros except the selected rows.
  Tensor ToDense() const;
};

// Concatenates the parts' rows (in part order) and merges repeats. Every part
// must have the same height, type and row shape.
SelectedRows MergeSelectedRows(const std::vector<const SelectedRows*>& parts);

}  // namespace rill
