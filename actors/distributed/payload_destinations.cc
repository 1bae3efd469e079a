#include "actors/distributed/payload_destinations.h"

#include "actors/distributed/wire.h"
#include "rill/error.h"

namespace rill {

void PayloadDestinations::Expect(const std::string& var, DataType dtype, const Shape& shape) {
  std::lock_guard<std::mutex> lock(mutex_);
  expected_[var] = {dtype, shape};
}

void PayloadDestinations::Admit(ConnectionId connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  admitted_.insert(connection);
}

void PayloadDestinations::Dismiss(ConnectionId connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  admitted_.erase(connection);
}

bool PayloadDestinations::Known(const std::string& var, const proto::TensorProto& tensor) const {
  const auto it = expected_.find(var);
  if (it == expected_.end() || !proto::DataType_IsValid(tensor.dtype()) ||
      tensor.dtype() != ToProto(it->second.first)) {
    return false;
  }
  const Shape& shape = it->second.second;
  return std::equal(shape.begin(), shape.end(), tensor.shape().begin(), tensor.shape().end());
}

Tensor PayloadDestinations::For(ConnectionId connection, const proto::WireMessage& message) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (admitted_only_ && !admitted_.count(connection)) return Tensor();
  const bool value =
      message.kind() == proto::WireMessage::PUSH || message.kind() == proto::WireMessage::VALUE;
  if (value && message.has_tensor() && !message.selected_rows() &&
      Known(message.var(), message.tensor())) {
    const auto& [dtype, shape] = expected_.at(message.var());
    return Tensor(dtype, shape);
  }
  if (message.kind() != proto::WireMessage::PUSH_BUNDLE || message.parts_size() == 0) {
    return Tensor();
  }
  for (const proto::BundledValue& part : message.parts()) {
    if (!Known(part.var(), part.tensor())) return Tensor();
  }
  uint64_t total = 0;
  try {
    BundleLayout(message, &total, "a bundle");
  } catch (const Error&) {
    return Tensor();  // the decoder refuses it by the same rule
  }
  return total > 0 ? BundleCarrier(total) : Tensor();
}

}  // namespace rill
