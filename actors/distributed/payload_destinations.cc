#include "actors/distributed/payload_destinations.h"

#include "actors/distributed/wire.h"
#include "rill/error.h"

namespace rill {

void PayloadDestinations::Expect(const std::string& var, DataType dtype, const Shape& shape) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& expected = expected_[var];
  if (expected.first != dtype || expected.second != shape) expected = {dtype, shape};
}

void PayloadDestinations::Admit(ConnectionId connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  admitted_.insert(connection);
}

void PayloadDestinations::Dismiss(ConnectionId connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  admitted_.erase(connection);
}

const std::pair<DataType, Shape>* PayloadDestinations::Known(
    const std::string& var, const proto::TensorProto& tensor) const {
  const auto it = expected_.find(var);
  if (it == expected_.end() || !proto::DataType_IsValid(tensor.dtype()) ||
      tensor.dtype() != ToProto(it->second.first)) {
    return nullptr;
  }
  const Shape& shape = it->second.second;
  const bool same =
      std::equal(shape.begin(), shape.end(), tensor.shape().begin(), tensor.shape().end());
  return same ? &it->second : nullptr;
}

Tensor PayloadDestinations::For(ConnectionId connection, const proto::WireMessage& message) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (admitted_only_ && !admitted_.count(connection)) return Tensor();
  const bool value =
      message.kind() == proto::WireMessage::PUSH || message.kind() == proto::WireMessage::VALUE;
  if (value && message.has_tensor() && !message.selected_rows()) {
    const auto* known = Known(message.var(), message.tensor());
    return known ? Tensor(known->first, known->second) : Tensor();
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
