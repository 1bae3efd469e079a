// Preloaded Fashion-MNIST-shaped batches of random pixels and labels, for
// benchmarks that time training steps without the cost of reading data.
#pragma once

#include <random>
#include <vector>

#include "rill/executor.h"
#include "tools/rill/models.h"

namespace rill::bench {

inline std::vector<FeedList> RandomBatches(const cli::Classifier& model, int batch, int count) {
  std::vector<FeedList> batches;
  for (int i = 0; i < count; ++i) {
    Tensor x(DataType::kFloat32, {batch, 784});
    std::mt19937 gen(static_cast<unsigned>(i));
    std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
    for (int64_t k = 0; k < x.numel(); ++k) x.mutable_data<float>()[k] = pixel(gen);
    Tensor y(DataType::kInt64, {batch, 1});
    for (int r = 0; r < batch; ++r) y.mutable_data<int64_t>()[r] = (r * 7 + i) % 10;
    batches.push_back({{model.image.name, x}, {model.label.name, y}});
  }
  return batches;
}

}  // namespace rill::bench
