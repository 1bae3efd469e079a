// The batches the benchmarks that compare Rill with PyTorch train on, the
// same on both sides: the first `examples` images of Fashion-MNIST's training
// set (tools/datasets, /usr/share/datasets/fashion-mnist) in file order,
// pixel / 255 in float32 as tools/datasets decodes them, cut in order into
// batches of `batch` rows (a remainder smaller than a batch is left out).
// tools/bench/fashion_batches.py reads the same batches for PyTorch; both
// print the sums below so that a script can check they agree.
//
// (The random batches these replace were not what once made PyTorch ten times
// slower here: that was glibc's malloc, see mlp_vs_torch.sh.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rill/error.h"
#include "rill/executor.h"
#include "tools/datasets/fashion_mnist.h"
#include "tools/rill/models.h"

namespace rill::bench {

inline constexpr int64_t kBenchExamples = 4096;

struct BenchBatches {
  std::vector<FeedList> feeds;
  double pixel_sum = 0;   // of the pixels of every batch, in double, in order
  int64_t label_sum = 0;  // of their labels
};

inline BenchBatches FashionBatches(const cli::Classifier& model, int batch,
                                   int64_t examples = kBenchExamples) {
  const RawImageSet raw = LoadFashionMnistRaw(kFashionMnistDir, /*train=*/true);
  RILL_CHECK(batch > 0 && examples >= batch && examples <= raw.size, kInvalidArgument,
             "benchmark batches: batch ", batch, " and ", examples, " examples of ", raw.size);
  const int64_t width = raw.rows * raw.cols;
  BenchBatches out;
  for (int64_t first = 0; first + batch <= examples; first += batch) {
    std::vector<int64_t> indices(static_cast<size_t>(batch));
    for (int64_t i = 0; i < batch; ++i) indices[static_cast<size_t>(i)] = first + i;
    Tensor x(DataType::kFloat32, {batch, width});
    Tensor y(DataType::kInt64, {batch, 1});
    DecodeImages(raw, indices.data(), batch, x.mutable_data<float>(), y.mutable_data<int64_t>());
    for (int64_t k = 0; k < x.numel(); ++k) out.pixel_sum += x.data<float>()[k];
    for (int64_t k = 0; k < batch; ++k) out.label_sum += y.data<int64_t>()[k];
    out.feeds.push_back({{model.image.name, x}, {model.label.name, y}});
  }
  return out;
}

}  // namespace rill::bench
