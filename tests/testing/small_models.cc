#include "tests/testing/small_models.h"

#include "rill/error.h"
#include "tests/testing/gradient_check.h"
#include "tests/testing/training.h"

namespace rill::testing {

constexpr DataType kF64 = DataType::kFloat64;

SmallModel SmallMlp() {
  return {"mlp",
          [](Builder& b) {
            Var x = b.Data("x", {-1, 10}, kF64);
            Var label = b.Data("label", {-1, 1}, DataType::kInt64);
            Var h = b.Fc(b.Fc(x, 12, Activation::kRelu), 8, Activation::kTanh);
            return b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(h, 4), label));
          },
          [](int step, int64_t batch) {
            return FeedList{{"x", RandomTensor({batch, 10}, 500 + static_cast<uint64_t>(step))},
                            {"label", CyclicLabels(batch, step, 4)}};
          }};
}

SmallModel SmallCnn() {
  return {"cnn",
          [](Builder& b) {
            Var x = b.Data("image", {-1, 1, 6, 6}, kF64);
            Var label = b.Data("label", {-1, 1}, DataType::kInt64);
            Var h = b.Pool2d(b.Conv2d(x, 3, 3, 1, 1, Activation::kRelu), 2);
            return b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(h, 5), label));
          },
          [](int step, int64_t batch) {
            return FeedList{
                {"image", RandomTensor({batch, 1, 6, 6}, 700 + static_cast<uint64_t>(step))},
                {"label", CyclicLabels(batch, step, 5)}};
          }};
}

SmallModel SmallBatchNormCnn(bool sync) {
  return {sync ? "sync_bn_cnn" : "bn_cnn",
          [sync](Builder& b) {
            b.set_sync_batch_norm(sync);
            Var x = b.Data("image", {-1, 2, 6, 6}, kF64);
            Var label = b.Data("label", {-1, 1}, DataType::kInt64);
            Var h = b.Conv2d(x, 3, 3, 1, 1, Activation::kNone, 1, /*bias=*/false);
            h = b.Pool2d(b.BatchNorm(h, Activation::kRelu, 0.8f), 2);
            // [N, C] too; after the tanh: a bias right before batch norm gets no gradient.
            h = b.BatchNorm(b.Fc(h, 6, Activation::kTanh), Activation::kNone, 0.8f);
            return b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(h, 4), label));
          },
          [](int step, int64_t batch) {
            // Shifted and scaled: batch norm has a mean and a variance to remove.
            Tensor image = RandomTensor({batch, 2, 6, 6}, 900 + static_cast<uint64_t>(step));
            for (int64_t i = 0; i < image.numel(); ++i) {
              image.mutable_data<double>()[i] = 3 * image.data<double>()[i] + 1.5;
            }
            return FeedList{{"image", image}, {"label", CyclicLabels(batch, step, 4)}};
          }};
}

SmallModel SmallEmbedding(bool sparse) {
  return {sparse ? "sparse" : "embedding",
          [sparse](Builder& b) {
            Var ids = b.Data("ids", {-1, 1}, DataType::kInt64);
            Var label = b.Data("label", {-1, 1}, DataType::kInt64);
            Var e = b.Embedding(ids, 20, 6, kF64, sparse);
            return b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(e, 3), label));
          },
          [](int step, int64_t batch) {
            Tensor ids(DataType::kInt64, {batch, 1});
            for (int64_t i = 0; i < batch; ++i)
              ids.mutable_data<int64_t>()[i] = (i * 7 + step) % 20;
            return FeedList{{"ids", ids}, {"label", CyclicLabels(batch, step, 3)}};
          }};
}

SmallModel SmallLoopedLstm() {
  return {"looped_lstm",
          [](Builder& b) {
            Var x = b.Data("x", {-1, 5, 3}, kF64);
            Var label = b.Data("label", {-1, 1}, DataType::kInt64);
            const RecurrentOutputs r = b.Lstm(x, 6, RnnForm::kWhile, std::nullopt, false);
            return b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(r.last_hidden, 4), label));
          },
          [](int step, int64_t batch) {
            return FeedList{{"x", RandomTensor({batch, 5, 3}, 1100 + static_cast<uint64_t>(step))},
                            {"label", CyclicLabels(batch, step, 4)}};
          }};
}

SmallModel SmallModelByName(const std::string& name) {
  if (name == "mlp") return SmallMlp();
  if (name == "cnn") return SmallCnn();
  if (name == "looped_lstm") return SmallLoopedLstm();
  RILL_CHECK(name == "embedding" || name == "sparse", kInvalidArgument, "no small model \"", name,
             "\" (mlp, cnn, looped_lstm, embedding or sparse)");
  return SmallEmbedding(name == "sparse");
}

}  // namespace rill::testing
