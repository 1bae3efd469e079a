// The recurrent models of `rill train` (models.h): Fashion-MNIST images read
// row by row, 28 steps of 28 pixels, by an LSTM or a GRU of 128 units whose
// last hidden state is classified by one fully connected layer.
#include "rill/error.h"
#include "tools/rill/models.h"

namespace rill::cli {

Var RecurrentLogits(Builder& b, const Var& image, const std::string& model, RnnForm rnn) {
  constexpr int kRows = 28, kHidden = 128;
  const Var rows = b.Reshape(image, {-1, kRows, kRows});
  RecurrentOutputs r;
  if (model == "lstm") {
    r = b.Lstm(rows, kHidden, rnn, std::nullopt, /*sequence_output=*/false);
  } else if (model == "gru") {
    r = b.Gru(rows, kHidden, rnn, std::nullopt, /*sequence_output=*/false);
  } else {
    Fail(ErrorCode::kInvalidArgument, "unknown recurrent model \"", model,
         "\" (expected lstm or gru)");
  }
  return b.Fc(r.last_hidden, 10);
}

}  // namespace rill::cli
