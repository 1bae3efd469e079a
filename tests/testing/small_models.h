// Small float64 models of the tests that train on several places, executors
// or processes and compare the parameters with one executor on the whole
// batch: an MLP, a CNN (conv, pool, fc), an embedding (dense or sparse
// gradient) and an LSTM looped in a While block, each with its feeds for any
// step and batch size.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "rill/builder.h"
#include "rill/feeds.h"

namespace rill::testing {

struct SmallModel {
  std::string name;
  std::function<Var(Builder&)> build;                      // returns the loss
  std::function<FeedList(int step, int64_t batch)> feeds;  // the feeds of step `step`
};

SmallModel SmallMlp();
SmallModel SmallCnn();
// conv, batch norm, pool, fc, batch norm ([N, C]), fc; sync_batch_norm when `sync`.
SmallModel SmallBatchNormCnn(bool sync);
// The embedding's gradient is selected rows when `sparse`.
SmallModel SmallEmbedding(bool sparse);
// An LSTM as cells in a While loop over 5 steps, its last state classified.
SmallModel SmallLoopedLstm();
// "mlp", "cnn", "looped_lstm", "embedding" or "sparse".
SmallModel SmallModelByName(const std::string& name);

}  // namespace rill::testing
