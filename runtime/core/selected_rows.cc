#include "rill/selected_rows.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "rill/error.h"

namespace rill {

Shape SelectedRows::DenseShape() const {
  Shape shape = value.shape();
  if (shape.empty()) return {height};
  shape[0] = height;
  return shape;
}

SelectedRows SelectedRows::Merged() const { return MergeSelectedRows({this}); }

Tensor SelectedRows::ToDense() const {
  Tensor dense(value.dtype(), DenseShape());
  dense.Fill(0);
  const int64_t width = rows.empty() ? 0 : value.numel() / static_cast<int64_t>(rows.size());
  VisitFloatType(value.dtype(), [&]<class T>() {
    const T* v = value.data<T>();
    T* d = dense.mutable_data<T>();
    for (size_t i = 0; i < rows.size(); ++i) {
      T* row = d + rows[i] * width;
      for (int64_t j = 0; j < width; ++j) row[j] += v[static_cast<int64_t>(i) * width + j];
    }
  });
  return dense;
}

SelectedRows MergeSelectedRows(const std::vector<const SelectedRows*>& parts) {
  RILL_CHECK(!parts.empty() && parts[0]->initialized(), kInvalidArgument,
             "no selected rows to merge");
  const SelectedRows& first = *parts[0];
  Shape row_shape = first.value.shape();
  RILL_CHECK(!row_shape.empty(), kInvalidArgument, "selected rows need a value of rank >= 1");
  row_shape.erase(row_shape.begin());
  const int64_t width = NumElements(row_shape);
  std::map<int64_t, int64_t> slot;  // row -> position in the result, in row order
  for (const SelectedRows* part : parts) {
    RILL_CHECK(part->initialized() && part->height == first.height &&
                   part->value.dtype() == first.value.dtype() &&
                   part->value.numel() == static_cast<int64_t>(part->rows.size()) * width,
               kInvalidArgument, "selected rows of different shapes: ", part->value.Describe(),
               " of height ", part->height, " and ", first.value.Describe(), " of height ",
               first.height);
    for (int64_t r : part->rows) {
      RILL_CHECK(r >= 0 && r < first.height, kOutOfRange, "selected row ", r, " outside [0, ",
                 first.height, ")");
      slot.emplace(r, 0);
    }
  }
  SelectedRows out;
  out.height = first.height;
  int64_t next = 0;
  for (auto& [row, position] : slot) {
    position = next++;
    out.rows.push_back(row);
  }
  Shape shape = row_shape;
  shape.insert(shape.begin(), static_cast<int64_t>(out.rows.size()));
  out.value = Tensor(first.value.dtype(), shape);
  out.value.Fill(0);
  VisitFloatType(first.value.dtype(), [&]<class T>() {
    T* o = out.value.mutable_data<T>();
    for (const SelectedRows* part : parts) {
      const T* v = part->value.data<T>();
      for (size_t i = 0; i < part->rows.size(); ++i) {
        T* dst = o + slot[part->rows[i]] * width;
        const T* src = v + static_cast<int64_t>(i) * width;
        for (int64_t j = 0; j < width; ++j) dst[j] += src[j];
      }
    }
  });
  return out;
}

}  // namespace rill
