// Random training programs for property tests of data parallelism: small
// MLPs, CNNs and embedding models (dense or sparse) in float32 or float64,
// trained with SGD, Momentum or Adam (sometimes with L2 and global-norm
// clipping) on random batches of random size. Deterministic for a seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rill/build_strategy.h"
#include "rill/data_type.h"
#include "rill/executor.h"
#include "rill/tensor.h"

namespace rill::testing {

struct RandomTraining {
  uint64_t seed = 0;
  enum class Kind { kMlp, kCnn, kEmbedding } kind = Kind::kMlp;
  DataType dtype = DataType::kFloat32;
  // Model sizes: MLP input width and hidden widths; CNN channels, image size
  // and filters; embedding vocabulary and width (and is_sparse).
  int64_t input = 0;
  std::vector<int> hidden;
  int activation = 0;  // 0 relu, 1 tanh, 2 sigmoid
  int64_t channels = 1, image = 6, filters = 2;
  int64_t vocab = 0, width = 0;
  bool sparse = false;
  int classes = 2;
  int optimizer = 0;  // 0 SGD, 1 Momentum, 2 Adam
  float learning_rate = 0.01f;
  float l2 = 0;
  float clip = 0;
  int64_t batch = 8;

  std::string Describe() const;
  // Step s's feeds (the whole batch; places split it).
  FeedList Feeds(int step) const;
};

RandomTraining MakeRandomTraining(uint64_t seed, DataType dtype);

// The parameters after each of `checkpoints` (increasing step counts), one
// vector of tensors per checkpoint (parameters in declaration order), and the
// parameters at start.
struct RandomTrainingRun {
  std::vector<Tensor> initial;
  std::vector<std::vector<Tensor>> at;
};

// Trains on `places` CPU places (ParallelExecutor, 2 threads, 1 BLAS thread).
RandomTrainingRun TrainRandom(const RandomTraining& t, int places, ReduceStrategy reduce,
                              const std::vector<int>& checkpoints);

// The difference of two runs' parameters at one checkpoint, the worst over
// the parameters: ||b - a|| / ||a|| (`of_value`) and ||b - a|| / ||a - a0||,
// the latter relative to how far training moved the parameter.
struct ParameterDifference {
  double of_value = 0;
  double of_update = 0;
};
ParameterDifference Difference(const std::vector<Tensor>& initial, const std::vector<Tensor>& a,
                               const std::vector<Tensor>& b);

}  // namespace rill::testing
