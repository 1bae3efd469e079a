#include "runtime/core/place_io.h"

#include <cstring>

#include "rill/error.h"

namespace rill {

std::vector<int64_t> SplitRows(int64_t rows, int places) {
  std::vector<int64_t> split(static_cast<size_t>(places), rows / places);
  for (int64_t p = 0; p < rows % places; ++p) ++split[static_cast<size_t>(p)];
  return split;
}

PlaceRows RowsOfPlace(int64_t rows, int places, int place) {
  const std::vector<int64_t> split = SplitRows(rows, places);
  PlaceRows out;
  for (int p = 0; p < place; ++p) out.begin += split[static_cast<size_t>(p)];
  out.count = split[static_cast<size_t>(place)];
  return out;
}

std::vector<Tensor> SplitBatch(const Tensor& batch, const std::vector<int64_t>& rows) {
  std::vector<Tensor> slices;
  int64_t begin = 0;
  for (int64_t n : rows) {
    slices.push_back(batch.Slice(begin, begin + n));
    begin += n;
  }
  return slices;
}

Tensor MergeFetch(FetchMerge how, const std::vector<Tensor>& values,
                  const std::vector<double>& weights) {
  RILL_CHECK(!values.empty(), kInternal, "no values to merge");
  if (how == FetchMerge::kFirst || values.size() == 1) return values[0];
  if (how == FetchMerge::kConcat) {
    Shape shape = values[0].shape();
    RILL_CHECK(!shape.empty(), kInternal, "cannot concatenate scalars");
    int64_t rows = 0;
    for (const Tensor& v : values) {
      RILL_CHECK(v.rank() == values[0].rank() && v.dtype() == values[0].dtype(), kInternal,
                 "places fetched different tensors: ", v.Describe(), " and ", values[0].Describe());
      rows += v.dim(0);
    }
    shape[0] = rows;
    Tensor out(values[0].dtype(), shape);
    auto* dst = static_cast<char*>(out.raw_data());
    for (const Tensor& v : values) {
      if (v.bytes() == 0) continue;
      std::memcpy(dst, v.raw_data(), v.bytes());
      dst += v.bytes();
    }
    return out;
  }
  double sum = 0;
  double total = 0;
  for (size_t p = 0; p < values.size(); ++p) {
    if (weights[p] <= 0) continue;
    sum += weights[p] * values[p].GetAsDouble(0);
    total += weights[p];
  }
  Tensor out(values[0].dtype(), values[0].shape());
  out.Fill(total > 0 ? sum / total : values[0].GetAsDouble(0));
  return out;
}

}  // namespace rill
