#include "actors/distributed/wire.h"

#include <google/protobuf/stubs/logging.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_set>
#include <utility>

#include "rill/checkpoint.h"
#include "rill/error.h"

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

// The message of a value whose bytes travel beside it: its tensor has the
// dtype and shape and no data; the payload shares the value's buffer.
FramedWire FramedValueMessage(WireMessage::Kind kind, const std::string& var, int64_t step,
                              const Tensor& value) {
  RILL_CHECK(value.initialized() && value.place().is_cpu(), kInvalidArgument, "cannot send \"", var,
             "\": ",
             value.initialized() ? StrCat("the value is on ", value.place().ToString())
                                 : std::string("it has no value"));
  FramedWire framed;
  framed.message.set_kind(kind);
  framed.message.set_var(var);
  framed.message.set_step(step);
  proto::TensorProto& tensor = *framed.message.mutable_tensor();
  tensor.set_dtype(ToProto(value.dtype()));
  tensor.mutable_shape()->Assign(value.shape().begin(), value.shape().end());
  framed.payload = value;
  return framed;
}

void CheckRowsToPush(const std::string& var, const SelectedRows& value) {
  RILL_CHECK(value.initialized() && value.value.rank() >= 1 &&
                 value.value.dim(0) == static_cast<int64_t>(value.rows.size()),
             kInvalidArgument, "cannot push \"", var, "\": ", value.rows.size(),
             " selected rows need a value with as many rows, got ",
             value.initialized() ? value.value.Describe() : std::string("no value"));
}

// Dimensions, each >= 0, and their product without overflow.
int64_t CheckedNumel(const Shape& shape, const std::string& where) {
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
  return numel;
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
  const int64_t numel = CheckedNumel(shape, where);
  const size_t item = SizeOf(dtype);
  const size_t bytes = tensor.data().size();
  if (static_cast<uint64_t>(numel) > bytes / item || static_cast<size_t>(numel) * item != bytes) {
    Fail(ErrorCode::kInvalidArgument, where, ": the tensor is ", DataTypeName(dtype),
         ShapeToString(shape), " but holds ", bytes, " bytes");
  }
}

constexpr int32_t kMaxCompressionChunk = 1 << 20;

GradientCompression CodesKind(int codes) {
  return codes == proto::CompressedTensor::INT4 ? GradientCompression::kInt4
                                                : GradientCompression::kInt8;
}

void CheckCompressed(const proto::CompressedTensor& c, const std::string& where) {
  if (c.codes() == proto::CompressedTensor::CODES_INVALID ||
      !proto::CompressedTensor::Codes_IsValid(c.codes())) {
    Fail(ErrorCode::kInvalidArgument, where, ": the compressed tensor has unknown codes ",
         static_cast<int>(c.codes()));
  }
  if (c.chunk() < 1 || c.chunk() > kMaxCompressionChunk) {
    Fail(ErrorCode::kInvalidArgument, where, ": compression chunk ", c.chunk(), " is outside [1, ",
         kMaxCompressionChunk, "]");
  }
  const Shape shape(c.dims().begin(), c.dims().end());
  const int64_t numel = CheckedNumel(shape, where);
  const bool int4 = c.codes() == proto::CompressedTensor::INT4;
  // Sizes are compared after dividing, so a huge shape cannot overflow them.
  const uint64_t codes = c.data().size();
  if (static_cast<uint64_t>(numel) / (int4 ? 2 : 1) > codes ||
      codes != static_cast<uint64_t>(int4 ? (numel + 1) / 2 : numel)) {
    Fail(ErrorCode::kInvalidArgument, where, ": the compressed tensor is float32",
         ShapeToString(shape), " but holds ", codes, " bytes of ", int4 ? "int4" : "int8",
         " codes");
  }
  const uint64_t chunks = (static_cast<uint64_t>(numel) + c.chunk() - 1) / c.chunk();
  if (c.scales().size() != chunks * sizeof(float)) {
    Fail(ErrorCode::kInvalidArgument, where, ": ", chunks, " chunks of ", c.chunk(),
         " values need ", chunks * sizeof(float), " bytes of scales, got ", c.scales().size());
  }
  for (uint64_t i = 0; i < chunks; ++i) {
    float scale;
    std::memcpy(&scale, c.scales().data() + i * sizeof(float), sizeof(float));
    if (scale < 0 || std::isinf(scale)) {  // NaN is allowed: a chunk that was not finite
      Fail(ErrorCode::kInvalidArgument, where, ": scale ", i, " is ", scale);
    }
  }
  const int lowest = -CompressionLevels(CodesKind(c.codes()));
  for (uint64_t i = 0; i < codes; ++i) {
    const auto byte = static_cast<uint8_t>(c.data()[i]);
    const bool last_odd = int4 && numel % 2 == 1 && i + 1 == codes;
    const int low = int4 ? (byte & 0xF) - ((byte & 0x8) << 1) : static_cast<int8_t>(byte);
    const int high = (byte >> 4) - ((byte & 0x80) >> 3);
    if (low < lowest || (int4 && (last_odd ? high != 0 : high < lowest))) {
      Fail(ErrorCode::kInvalidArgument, where, ": code byte ", i, " (", static_cast<int>(byte),
           ") is outside [", lowest, ", ", -lowest, "]", last_odd ? " or has a high nibble" : "");
    }
  }
}

// The shape of the value a PUSH or VALUE carries.
Shape ValueShape(const WireMessage& message) {
  if (message.has_compressed()) {
    return Shape(message.compressed().dims().begin(), message.compressed().dims().end());
  }
  return Shape(message.tensor().shape().begin(), message.tensor().shape().end());
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
  const Shape shape = ValueShape(message);
  if (shape.empty() || shape[0] != message.rows_size()) {
    Fail(ErrorCode::kInvalidArgument, where, ": ", message.rows_size(),
         " selected rows but the tensor has shape ", ShapeToString(shape),
         " (dim 0 must be the row count)");
  }
  for (int i = 0; i < message.rows_size(); ++i) {
    const int64_t row = message.rows(i);
    if (row < 0 || row >= height) {
      Fail(ErrorCode::kInvalidArgument, where, ": row ", row, " (index ", i, ") is outside [0, ",
           height, ")");
    }
  }
}

// A payload that came beside the message (a transport frame's): the message's
// tensor holds no bytes and describes exactly the payload.
void CheckPayload(const proto::TensorProto& tensor, const Tensor& payload,
                  const std::string& where) {
  RILL_CHECK(tensor.data().empty(), kInvalidArgument, where, ": the tensor holds ",
             tensor.data().size(), " bytes and a payload came beside it");
  if (tensor.dtype() == proto::DT_INVALID || !proto::DataType_IsValid(tensor.dtype())) {
    Fail(ErrorCode::kInvalidArgument, where, ": the tensor has invalid data type ",
         static_cast<int>(tensor.dtype()));
  }
  const Shape shape(tensor.shape().begin(), tensor.shape().end());
  CheckedNumel(shape, where);
  const DataType dtype = FromProto(tensor.dtype());
  RILL_CHECK(payload.dtype() == dtype && payload.shape() == shape && payload.place().is_cpu(),
             kInvalidArgument, where, ": the tensor is ", DataTypeName(dtype), ShapeToString(shape),
             " but its payload is ", payload.Describe());
}

// A PUSH_BUNDLE: parts naming distinct variables, each a dense tensor described
// without data, and nothing else but step and trainer_id; its payload is exactly
// the parts' layout.
void CheckBundle(const WireMessage& message, const std::string& where, const Tensor* payload) {
  RILL_CHECK(payload != nullptr, kInvalidArgument, where,
             ": a PUSH_BUNDLE travels only in a transport frame");
  RILL_CHECK(message.parts_size() > 0, kInvalidArgument, where, ": no parts");
  RILL_CHECK(message.var().empty() && !message.has_tensor() && !message.has_compressed() &&
                 !message.selected_rows() && message.rows_size() == 0 && message.height() == 0,
             kInvalidArgument, where, ": a PUSH_BUNDLE carries its values in parts only");
  std::unordered_set<std::string> seen;
  for (int i = 0; i < message.parts_size(); ++i) {
    const proto::BundledValue& part = message.parts(i);
    RILL_CHECK(!part.var().empty(), kInvalidArgument, where, ": part ", i, " has no var");
    RILL_CHECK(seen.insert(part.var()).second, kInvalidArgument, where, ": part ", i, " (\"",
               part.var(), "\") names a variable an earlier part named");
    RILL_CHECK(part.tensor().data().empty(), kInvalidArgument, where, ": part ", i, " (\"",
               part.var(), "\") holds bytes in the message");
  }
  uint64_t total = 0;
  BundleLayout(message, &total, where);
  RILL_CHECK(payload->initialized() && payload->place().is_cpu() && payload->bytes() == total,
             kInvalidArgument, where, ": its parts take ", total, " bytes but the payload is ",
             payload->initialized() ? payload->Describe() : std::string("missing"));
}

// `payload`: null for a message decoded from bytes (DecodeWire), else what
// came beside it in a frame (possibly not initialized).
void CheckMessage(const WireMessage& message, const std::string& peer, const Tensor* payload) {
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
  RILL_CHECK(message.last_step() >= 0, kInvalidArgument, where, ": negative last_step ",
             message.last_step());
  for (int64_t step : message.steps()) {
    RILL_CHECK(step >= 0, kInvalidArgument, where, ": negative step ", step, " in steps");
  }
  RILL_CHECK(kind == WireMessage::HELLO || message.steps_size() == 0, kInvalidArgument, where,
             ": only a HELLO carries steps");
  switch (kind) {
    case WireMessage::HELLO:
    case WireMessage::BYE:
    case WireMessage::RESUME:
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
    case WireMessage::STORE_SET:
    case WireMessage::STORE_GET:
    case WireMessage::STORE_VALUE:
      RILL_CHECK(!message.var().empty(), kInvalidArgument, where, ": no key");
      break;
    default: break;
  }
  RILL_CHECK(!message.standing() || kind == WireMessage::PULL || kind == WireMessage::VALUE,
             kInvalidArgument, where, ": only a PULL or VALUE is standing");
  RILL_CHECK(message.store_value().empty() || kind == WireMessage::STORE_SET ||
                 kind == WireMessage::STORE_VALUE,
             kInvalidArgument, where, ": only a STORE_SET or STORE_VALUE carries a store value");
  RILL_CHECK(kind == WireMessage::PUSH_BUNDLE || message.parts_size() == 0, kInvalidArgument, where,
             ": only a PUSH_BUNDLE carries parts");
  if (kind == WireMessage::PUSH_BUNDLE) {
    CheckBundle(message, where, payload);
    return;
  }
  if (payload != nullptr && payload->initialized() && !CarriesValue(kind)) {
    Fail(ErrorCode::kInvalidArgument, where, ": a ", WireKindName(kind),
         " carries no value, but a payload of ", payload->Describe(), " came with it");
  }
  if (payload != nullptr && payload->initialized() && message.has_compressed()) {
    Fail(ErrorCode::kInvalidArgument, where, ": a compressed value and a payload of ",
         payload->Describe(), " beside it");
  }
  if (CarriesValue(kind)) {
    RILL_CHECK(message.has_tensor() != message.has_compressed(), kInvalidArgument, where,
               message.has_tensor() ? ": both a tensor and a compressed tensor" : ": no tensor");
    if (message.has_compressed()) {
      RILL_CHECK(kind == WireMessage::PUSH, kInvalidArgument, where,
                 ": only a PUSH carries a compressed tensor");
      CheckCompressed(message.compressed(), where);
    } else if (payload != nullptr && payload->initialized()) {
      CheckPayload(message.tensor(), *payload, where);
    } else {
      CheckTensor(message.tensor(), where);
    }
    CheckRows(message, where);
  } else if (message.has_tensor() || message.has_compressed() || message.selected_rows() ||
             message.rows_size() != 0 || message.height() != 0) {
    Fail(ErrorCode::kInvalidArgument, where, ": a ", WireKindName(kind), " carries no value");
  }
}

// Where a payload comes from, for TensorFromProto's errors.
std::string PayloadSource(const WireMessage& message) {
  return StrCat("wire ", WireKindName(message.kind()), " of \"", message.var(), "\"");
}

uint64_t AlignedBundleBytes(uint64_t bytes) {
  return (bytes + kBundleAlignment - 1) / kBundleAlignment * kBundleAlignment;
}

}  // namespace

WireMessage WirePushBundle(int64_t step, const std::vector<BundlePart>& parts) {
  WireMessage message;
  message.set_kind(WireMessage::PUSH_BUNDLE);
  message.set_step(step);
  for (const BundlePart& part : parts) {
    RILL_CHECK(part.value.initialized() && part.value.place().is_cpu(), kInvalidArgument,
               "cannot bundle \"", part.var, "\": ",
               part.value.initialized() ? StrCat("the value is on ", part.value.place().ToString())
                                        : std::string("it has no value"));
    proto::BundledValue* bundled = message.add_parts();
    bundled->set_var(part.var);
    bundled->mutable_tensor()->set_dtype(ToProto(part.value.dtype()));
    bundled->mutable_tensor()->mutable_shape()->Assign(part.value.shape().begin(),
                                                       part.value.shape().end());
  }
  return message;
}

std::vector<uint64_t> BundleLayout(const WireMessage& message, uint64_t* total,
                                   const std::string& where) {
  std::vector<uint64_t> offsets;
  offsets.reserve(static_cast<size_t>(message.parts_size()));
  // A frame's payload is far below 2^62 bytes (its header was checked against
  // the message limit), so a sum over that is refused rather than wrapped.
  constexpr uint64_t kMaxBytes = uint64_t{1} << 62;
  uint64_t end = 0;
  for (const proto::BundledValue& part : message.parts()) {
    const std::string at = StrCat(where, ", part \"", part.var(), "\"");
    const proto::TensorProto& tensor = part.tensor();
    if (tensor.dtype() == proto::DT_INVALID || !proto::DataType_IsValid(tensor.dtype())) {
      Fail(ErrorCode::kInvalidArgument, at, ": invalid data type ",
           static_cast<int>(tensor.dtype()));
    }
    const int64_t numel = CheckedNumel(Shape(tensor.shape().begin(), tensor.shape().end()), at);
    const uint64_t item = SizeOf(FromProto(tensor.dtype()));
    RILL_CHECK(static_cast<uint64_t>(numel) <= (kMaxBytes - end) / item, kInvalidArgument, at,
               ": the parts' sizes overflow");
    offsets.push_back(end);
    end = AlignedBundleBytes(end + static_cast<uint64_t>(numel) * item);
  }
  *total = end;
  return offsets;
}

Tensor BundleCarrier(uint64_t total) {
  RILL_CHECK(total % kBundleAlignment == 0, kInvalidArgument, "a bundle of ", total,
             " bytes is not whole words");
  return Tensor(DataType::kInt64, Shape{static_cast<int64_t>(total / kBundleAlignment)});
}

std::vector<BundlePart> WireBundle(const WireMessage& message, const Tensor& payload) {
  uint64_t total = 0;
  const std::vector<uint64_t> offsets = BundleLayout(message, &total, "wire PUSH_BUNDLE");
  RILL_CHECK(payload.initialized() && payload.bytes() == total, kInvalidArgument,
             "a PUSH_BUNDLE of ", total, " bytes with a payload of ",
             payload.initialized() ? payload.Describe() : std::string("none"));
  std::vector<BundlePart> parts;
  parts.reserve(offsets.size());
  for (int i = 0; i < message.parts_size(); ++i) {
    const proto::TensorProto& tensor = message.parts(i).tensor();
    parts.push_back(
        {message.parts(i).var(), payload.View(FromProto(tensor.dtype()),
                                              Shape(tensor.shape().begin(), tensor.shape().end()),
                                              offsets[static_cast<size_t>(i)])});
  }
  return parts;
}

WireMessage WireHello(int trainer_id, int64_t last_step) {
  WireMessage message;
  message.set_kind(WireMessage::HELLO);
  message.set_trainer_id(trainer_id);
  message.set_last_step(last_step);
  return message;
}

WireMessage WireHelloReply(const std::vector<int64_t>& steps) {
  WireMessage message;
  message.set_kind(WireMessage::HELLO);
  message.mutable_steps()->Add(steps.begin(), steps.end());
  return message;
}

WireMessage WireResume(int trainer_id, int64_t step) {
  WireMessage message;
  message.set_kind(WireMessage::RESUME);
  message.set_trainer_id(trainer_id);
  message.set_step(step);
  return message;
}

WireMessage WireResumed(int64_t step) {
  WireMessage message;
  message.set_kind(WireMessage::RESUME);
  message.set_step(step);
  return message;
}

WireMessage WirePush(const std::string& var, int64_t step, const Tensor& value) {
  return ValueMessage(WireMessage::PUSH, var, step, value);
}

WireMessage WirePushRows(const std::string& var, int64_t step, const SelectedRows& value) {
  CheckRowsToPush(var, value);
  WireMessage message = ValueMessage(WireMessage::PUSH, var, step, value.value);
  message.set_selected_rows(true);
  message.mutable_rows()->Add(value.rows.begin(), value.rows.end());
  message.set_height(value.height);
  return message;
}

WireMessage WirePushCompressed(const std::string& var, int64_t step, const Shape& shape,
                               const QuantizedValues& q, const SelectedRows* rows) {
  RILL_CHECK(q.kind != GradientCompression::kNone && NumElements(shape) == q.count,
             kInvalidArgument, "cannot push \"", var, "\": ", q.count,
             " compressed values for shape ", ShapeToString(shape));
  WireMessage message;
  message.set_kind(WireMessage::PUSH);
  message.set_var(var);
  message.set_step(step);
  proto::CompressedTensor& c = *message.mutable_compressed();
  c.set_codes(q.kind == GradientCompression::kInt4 ? proto::CompressedTensor::INT4
                                                   : proto::CompressedTensor::INT8);
  c.set_chunk(q.chunk);
  c.mutable_dims()->Add(shape.begin(), shape.end());
  if (!q.scales.empty()) {
    c.set_scales(reinterpret_cast<const char*>(q.scales.data()), q.scales.size() * sizeof(float));
  }
  c.set_data(q.codes);
  if (rows != nullptr) {
    RILL_CHECK(!shape.empty() && shape[0] == static_cast<int64_t>(rows->rows.size()),
               kInvalidArgument, "cannot push \"", var, "\": ", rows->rows.size(),
               " selected rows for values of shape ", ShapeToString(shape));
    message.set_selected_rows(true);
    message.mutable_rows()->Add(rows->rows.begin(), rows->rows.end());
    message.set_height(rows->height);
  }
  return message;
}

FramedWire FramedPush(const std::string& var, int64_t step, const Tensor& value) {
  return FramedValueMessage(WireMessage::PUSH, var, step, value);
}

FramedWire FramedPushRows(const std::string& var, int64_t step, const SelectedRows& value) {
  CheckRowsToPush(var, value);
  FramedWire framed = FramedValueMessage(WireMessage::PUSH, var, step, value.value);
  framed.message.set_selected_rows(true);
  framed.message.mutable_rows()->Add(value.rows.begin(), value.rows.end());
  framed.message.set_height(value.height);
  return framed;
}

FramedWire FramedValue(const std::string& var, int64_t step, const Tensor& value) {
  return FramedValueMessage(WireMessage::VALUE, var, step, value);
}

void CheckFramedWire(const WireMessage& message, const Tensor& payload, const std::string& peer) {
  CheckMessage(message, peer, &payload);
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

WireMessage WireStoreSet(const std::string& key, const std::string& value) {
  WireMessage message;
  message.set_kind(WireMessage::STORE_SET);
  message.set_var(key);
  message.set_store_value(value);
  return message;
}

WireMessage WireStoreGet(const std::string& key) {
  WireMessage message;
  message.set_kind(WireMessage::STORE_GET);
  message.set_var(key);
  return message;
}

WireMessage WireStoreValue(const std::string& key, const std::string& value) {
  WireMessage message = WireStoreSet(key, value);
  message.set_kind(WireMessage::STORE_VALUE);
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
  CheckMessage(message, peer, nullptr);
  return message;
}

namespace {

bool HasValue(const WireMessage& message) {
  return CarriesValue(message.kind()) && (message.has_tensor() || message.has_compressed());
}

// The value of a decoded message (checked by DecodeWire), compressed or not.
Tensor ValueOf(const WireMessage& message) {
  if (!message.has_compressed()) return TensorFromProto(message.tensor(), PayloadSource(message));
  const proto::CompressedTensor& c = message.compressed();
  QuantizedValues q;
  q.kind = CodesKind(c.codes());
  q.chunk = c.chunk();
  const Shape shape(c.dims().begin(), c.dims().end());
  q.count = NumElements(shape);
  q.scales.resize(c.scales().size() / sizeof(float));
  if (!q.scales.empty()) {  // memcpy of nothing from an empty vector's null data is undefined
    std::memcpy(q.scales.data(), c.scales().data(), q.scales.size() * sizeof(float));
  }
  q.codes = c.data();
  Tensor value(DataType::kFloat32, shape);
  Dequantize(q, value.mutable_data<float>());
  return value;
}

}  // namespace

Tensor WireTensor(const WireMessage& message) { return WireTensor(message, Tensor()); }

SelectedRows WireRows(const WireMessage& message) { return WireRows(message, Tensor()); }

Tensor WireTensor(const WireMessage& message, Tensor payload) {
  RILL_CHECK(HasValue(message) && !message.selected_rows(), kInvalidArgument,
             PayloadSource(message), " carries no dense value",
             message.selected_rows() ? " (it carries selected rows)" : "");
  return payload.initialized() ? std::move(payload) : ValueOf(message);
}

SelectedRows WireRows(const WireMessage& message, Tensor payload) {
  RILL_CHECK(HasValue(message) && message.selected_rows(), kInvalidArgument, PayloadSource(message),
             " carries no selected rows");
  SelectedRows value;
  value.rows.assign(message.rows().begin(), message.rows().end());
  value.height = message.height();
  value.value = payload.initialized() ? std::move(payload) : ValueOf(message);
  return value;
}

std::string WireKindName(int kind) {
  if (!WireMessage::Kind_IsValid(kind)) return StrCat("kind ", kind);
  return WireMessage::Kind_Name(static_cast<WireMessage::Kind>(kind));
}

}  // namespace rill
