#include "actors/wire.h"

#include <google/protobuf/stubs/logging.h>

#include <limits>
#include <utility>

#include "runtime/error.h"
#include "runtime/io/checkpoint.h"

namespace rill {
namespace {

using proto::WireMessage;

bool CarriesValue(int kind) { return kind == WireMessage::PUSH || kind == WireMessage::VALUE; }

// The value's tensor, named after nothing: `var` names it on the wire.
proto::TensorProto ValueProto(const std::string& var, const Tensor& value) {
  proto::TensorProto tensor = TensorToProto(var, value);
  tensor.clear_name();
  return tensor;
}

WireMessage ValueMessage(WireMessage::Kind kind, const std::string& var, int64_t step,
                         const Tensor& value) {
  WireMessage message;
  message.set_kind(kind);
  message.set_var(var);
  message.set_step(step);
  *message.mutable_tensor() = ValueProto(var, value);  // moved: no copy of the bytes
  return message;
}

// The element bytes must match dtype and shape (TensorFromProto checks the
// same when the payload is taken out; checked here without copying it).
void CheckTensor(const proto::TensorProto& tensor, const std::string& where) {
  if (tensor.dtype() == proto::DT_INVALID || !proto::DataType_IsValid(tensor.dtype())) {
    Fail(ErrorCode::kInvalidArgument, where, ": the tensor has invalid data type ",
         static_cast<int>(tensor.dtype()));
  }
  const DataType dtype = FromProto(tensor.dtype());
  const Shape shape(tensor.shape().begin(), tensor.shape().end());
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0)
      Fail(ErrorCode::kInvalidArgument, where, ": negative dimension in shape ",
           ShapeToString(shape));
    if (d != 0 && numel > std::numeric_limits<int64_t>::max() / d) {
      Fail(ErrorCode::kInvalidArgument, where, ": shape too large: ", ShapeToString(shape));
    }
    numel *= d;
  }
  const size_t item = SizeOf(dtype);
  const size_t bytes = tensor.data().size();
  if (static_cast<uint64_t>(numel) > bytes / item || static_cast<size_t>(numel) * item != bytes) {
    Fail(ErrorCode::kInvalidArgument, where, ": the tensor is ", DataTypeName(dtype),
         ShapeToString(shape), " but holds ", bytes, " bytes");
  }
}

// Selected rows: one index in [0, height) per row of the tensor. A dense value
// has no rows and no height.
void CheckRows(const WireMessage& message, const std::string& where) {
  if (!message.selected_rows()) {
    if (message.rows_size() != 0 || message.height() != 0) {
      Fail(ErrorCode::kInvalidArgument, where, ": a dense value with ", message.rows_size(),
           " rows and height ", message.height(), " (selected_rows not set)");
    }
    return;
  }
  const int64_t height = message.height();
  if (height < 0) Fail(ErrorCode::kInvalidArgument, where, ": negative height ", height);
  const auto& shape = message.tensor().shape();
  if (shape.empty() || shape[0] != message.rows_size()) {
    Fail(ErrorCode::kInvalidArgument, where, ": ", message.rows_size(),
         " selected rows but the tensor has shape ",
         ShapeToString(Shape(shape.begin(), shape.end())), " (dim 0 must be the row count)");
  }
  for (int i = 0; i < message.rows_size(); ++i) {
    const int64_t row = message.rows(i);
    if (row < 0 || row >= height) {
      Fail(ErrorCode::kInvalidArgument, where, ": row ", row, " (index ", i, ") is outside [0, ",
           height, ")");
    }
  }
}

void CheckMessage(const WireMessage& message, const std::string& peer) {
  const int kind = message.kind();
  if (kind == WireMessage::KIND_INVALID) {
    Fail(ErrorCode::kInvalidArgument, "wire message from ", peer, " has no kind");
  }
  if (!WireMessage::Kind_IsValid(kind)) {
    Fail(ErrorCode::kInvalidArgument, "wire message from ", peer, " has unknown kind ", kind);
  }
  std::string where = StrCat("wire ", WireKindName(kind), " from ", peer);
  if (!message.var().empty()) where += StrCat(" of \"", message.var(), "\"");
  RILL_CHECK(message.step() >= 0, kInvalidArgument, where, ": negative step ", message.step());
  switch (kind) {
    case WireMessage::HELLO:
    case WireMessage::BYE:
      RILL_CHECK(message.trainer_id() >= 0, kInvalidArgument, where, ": negative trainer_id ",
                 message.trainer_id());
      break;
    case WireMessage::PUSH:
    case WireMessage::PULL:
    case WireMessage::VALUE:
      RILL_CHECK(!message.var().empty(), kInvalidArgument, where, ": no var");
      break;
    case WireMessage::ERROR:
      RILL_CHECK(!message.error().empty(), kInvalidArgument, where, ": no error text");
      break;
    default: break;
  }
  if (CarriesValue(kind)) {
    RILL_CHECK(message.has_tensor(), kInvalidArgument, where, ": no tensor");
    CheckTensor(message.tensor(), where);
    CheckRows(message, where);
  } else if (message.has_tensor() || message.selected_rows() || message.rows_size() != 0 ||
             message.height() != 0) {
    Fail(ErrorCode::kInvalidArgument, where, ": a ", WireKindName(kind), " carries no value");
  }
}

// Where a payload comes from, for TensorFromProto's errors.
std::string PayloadSource(const WireMessage& message) {
  return StrCat("wire ", WireKindName(message.kind()), " of \"", message.var(), "\"");
}

}  // namespace

WireMessage WireHello(int trainer_id, const std::string& token) {
  WireMessage message;
  message.set_kind(WireMessage::HELLO);
  message.set_trainer_id(trainer_id);
  message.set_token(token);
  return message;
}

WireMessage WireHelloReply(int64_t step) {
  WireMessage message;
  message.set_kind(WireMessage::HELLO);
  message.set_step(step);
  return message;
}

WireMessage WirePush(const std::string& var, int64_t step, const Tensor& value) {
  return ValueMessage(WireMessage::PUSH, var, step, value);
}

WireMessage WirePushRows(const std::string& var, int64_t step, const SelectedRows& value) {
  RILL_CHECK(value.initialized() && value.value.rank() >= 1 &&
                 value.value.dim(0) == static_cast<int64_t>(value.rows.size()),
             kInvalidArgument, "cannot push \"", var, "\": ", value.rows.size(),
             " selected rows need a value with as many rows, got ",
             value.initialized() ? value.value.Describe() : std::string("no value"));
  WireMessage message = ValueMessage(WireMessage::PUSH, var, step, value.value);
  message.set_selected_rows(true);
  message.mutable_rows()->Add(value.rows.begin(), value.rows.end());
  message.set_height(value.height);
  return message;
}

WireMessage WirePull(const std::string& var) {
  WireMessage message;
  message.set_kind(WireMessage::PULL);
  message.set_var(var);
  return message;
}

WireMessage WireValue(const std::string& var, int64_t step, const Tensor& value) {
  return ValueMessage(WireMessage::VALUE, var, step, value);
}

WireMessage WireHeartbeat() {
  WireMessage message;
  message.set_kind(WireMessage::HEARTBEAT);
  return message;
}

WireMessage WireError(const std::string& text) {
  WireMessage message;
  message.set_kind(WireMessage::ERROR);
  message.set_error(text);
  return message;
}

WireMessage WireBye(int trainer_id) {
  WireMessage message;
  message.set_kind(WireMessage::BYE);
  message.set_trainer_id(trainer_id);
  return message;
}

std::string EncodeWire(const WireMessage& message) {
  std::string bytes;
  RILL_CHECK(message.SerializeToString(&bytes), kInvalidArgument, "cannot encode a wire ",
             WireKindName(message.kind()), " of \"", message.var(), "\" (over 2 GiB?)");
  return bytes;
}

WireMessage DecodeWire(const std::string& bytes, const WireLimits& limits,
                       const std::string& peer) {
  if (bytes.size() > limits.max_message_bytes) {
    Fail(ErrorCode::kInvalidArgument, "wire message from ", peer, " is ", bytes.size(),
         " bytes, over the limit of ", limits.max_message_bytes);
  }
  WireMessage message;
  {
    google::protobuf::LogSilencer quiet;  // a bad message is reported below, once
    if (!message.ParseFromString(bytes)) {
      Fail(ErrorCode::kParse, "wire message from ", peer, ": ", bytes.size(),
           " bytes that do not parse as a WireMessage");
    }
  }
  CheckMessage(message, peer);
  return message;
}

Tensor WireTensor(const WireMessage& message) {
  RILL_CHECK(CarriesValue(message.kind()) && message.has_tensor() && !message.selected_rows(),
             kInvalidArgument, PayloadSource(message), " carries no dense value",
             message.selected_rows() ? " (it carries selected rows)" : "");
  return TensorFromProto(message.tensor(), PayloadSource(message));
}

SelectedRows WireRows(const WireMessage& message) {
  RILL_CHECK(CarriesValue(message.kind()) && message.has_tensor() && message.selected_rows(),
             kInvalidArgument, PayloadSource(message), " carries no selected rows");
  SelectedRows value;
  value.rows.assign(message.rows().begin(), message.rows().end());
  value.height = message.height();
  value.value = TensorFromProto(message.tensor(), PayloadSource(message));
  return value;
}

std::string WireKindName(int kind) {
  if (!WireMessage::Kind_IsValid(kind)) return StrCat("kind ", kind);
  return WireMessage::Kind_Name(static_cast<WireMessage::Kind>(kind));
}

}  // namespace rill
