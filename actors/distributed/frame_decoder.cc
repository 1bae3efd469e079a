#include "actors/distributed/frame_decoder.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "actors/distributed/wire.h"
#include "rill/error.h"

namespace rill {
namespace {

// The first allocation for a meta or payload that has not all arrived; each
// later one at most doubles what arrived.
constexpr size_t kFirstChunkBytes = 64 << 10;

// The payload size the message's tensor describes, or throws naming `peer`.
uint64_t DescribedPayloadBytes(const proto::WireMessage& message, const std::string& peer) {
  if (message.kind() == proto::WireMessage::PUSH_BUNDLE) {
    uint64_t total = 0;
    BundleLayout(message, &total, StrCat("frame from ", peer, " (PUSH_BUNDLE)"));
    return total;
  }
  if (!message.has_tensor() || !message.tensor().data().empty()) return 0;
  const proto::TensorProto& tensor = message.tensor();
  RILL_CHECK(proto::DataType_IsValid(tensor.dtype()) && tensor.dtype() != proto::DT_INVALID,
             kInvalidArgument, "frame from ", peer, " (", message.var(),
             "): the tensor has invalid data type ", static_cast<int>(tensor.dtype()));
  uint64_t bytes = SizeOf(FromProto(tensor.dtype()));
  for (int64_t d : tensor.shape()) {
    RILL_CHECK(d >= 0, kInvalidArgument, "frame from ", peer, " (", message.var(),
               "): negative dimension ", d);
    RILL_CHECK(d == 0 || bytes <= std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d),
               kInvalidArgument, "frame from ", peer, " (", message.var(),
               "): the tensor's shape overflows");
    bytes *= static_cast<uint64_t>(d);
  }
  return bytes;
}

}  // namespace

FrameDecoder::FrameDecoder(FrameLimits limits, std::string peer, Destination destination)
    : limits_(limits), peer_(std::move(peer)), destination_(std::move(destination)) {}

std::span<uint8_t> FrameDecoder::NextBuffer() {
  switch (state_) {
    case State::kHeader: return {header_bytes_ + filled_, kFrameHeaderBytes - filled_};
    case State::kMeta:
      if (filled_ == meta_.size()) GrowMeta();
      return {meta_.data() + filled_, meta_.size() - filled_};
    case State::kPayload:
      if (filled_ == payload_capacity_) GrowPayload();
      return {static_cast<uint8_t*>(payload_.raw_data()) + filled_, payload_capacity_ - filled_};
  }
  Fail(ErrorCode::kInternal, "FrameDecoder: bad state");
}

void FrameDecoder::Commit(size_t size) {
  filled_ += size;
  switch (state_) {
    case State::kHeader:
      if (filled_ == kFrameHeaderBytes) HeaderDone();
      return;
    case State::kMeta:
      if (filled_ == header_.meta_bytes) MetaDone();
      return;
    case State::kPayload:
      if (filled_ == header_.payload_bytes) PayloadDone();
      return;
  }
}

ReceivedFrame FrameDecoder::TakeFrame() {
  RILL_CHECK(!frames_.empty(), kInternal, "FrameDecoder::TakeFrame without a frame");
  ReceivedFrame frame = std::move(frames_.front());
  frames_.pop_front();
  return frame;
}

size_t FrameDecoder::held_bytes() const {
  const bool own_payload = payload_.initialized() && !payload_is_destination_;
  return meta_.capacity() + (own_payload ? payload_.bytes() : 0);
}

void FrameDecoder::HeaderDone() {
  header_ = DecodeFrameHeader(header_bytes_);
  CheckFrameHeader(header_, limits_, peer_);
  filled_ = 0;
  frame_ = ReceivedFrame{};
  frame_.kind = static_cast<FrameKind>(header_.kind);
  if (frame_.kind == FrameKind::kHeartbeat) {
    Finish(std::move(frame_));
    return;
  }
  meta_.clear();
  state_ = State::kMeta;
  if (header_.meta_bytes == 0) MetaDone();  // no meta byte will come to complete it
}

void FrameDecoder::GrowMeta() {
  const size_t want = std::min<size_t>(header_.meta_bytes, std::max(kFirstChunkBytes, 2 * filled_));
  meta_.resize(want);
}

void FrameDecoder::MetaDone() {
  RILL_CHECK(frame_.message.ParseFromArray(meta_.data(), static_cast<int>(header_.meta_bytes)),
             kParse, "frame from ", peer_, ": its ", header_.meta_bytes,
             " meta bytes are not a wire message");
  std::vector<uint8_t>().swap(meta_);  // a large meta is not kept for the next frame
  const uint64_t described = DescribedPayloadBytes(frame_.message, peer_);
  RILL_CHECK(described == header_.payload_bytes, kInvalidArgument, "frame from ", peer_, " (",
             proto::WireMessage::Kind_Name(frame_.message.kind()), " ", frame_.message.var(),
             "): the header claims ", header_.payload_bytes,
             " payload bytes but the tensor's dtype x shape makes ", described);
  filled_ = 0;
  if (header_.payload_bytes == 0) {
    Finish(std::move(frame_));
    return;
  }
  // A bundle's bytes arrive as words (BundleCarrier), a value's as its tensor;
  // either where the destination says, when it names one.
  const proto::TensorProto& described_tensor = frame_.message.tensor();
  const DataType dtype = bundle() ? DataType::kInt64 : FromProto(described_tensor.dtype());
  const Shape shape = bundle()
                          ? Shape{static_cast<int64_t>(header_.payload_bytes / kBundleAlignment)}
                          : Shape(described_tensor.shape().begin(), described_tensor.shape().end());
  payload_ = destination_ ? destination_(frame_.message) : Tensor();
  if (payload_.initialized()) {
    RILL_CHECK(payload_.dtype() == dtype && payload_.shape() == shape && payload_.place().is_cpu(),
               kInvalidArgument, "frame from ", peer_, " (", frame_.message.var(), "): carries ",
               DataTypeName(dtype), ShapeToString(shape), " but its destination is ",
               payload_.Describe());
    payload_capacity_ = payload_.bytes();
    payload_final_ = true;
    payload_is_destination_ = true;
  } else {
    payload_capacity_ = 0;
    payload_final_ = false;
    payload_is_destination_ = false;
  }
  state_ = State::kPayload;
}

void FrameDecoder::GrowPayload() {
  const proto::TensorProto& described = frame_.message.tensor();
  const DataType dtype = bundle() ? DataType::kInt64 : FromProto(described.dtype());
  const size_t element = SizeOf(dtype);
  const size_t total = header_.payload_bytes;
  size_t want = std::max(kFirstChunkBytes, 2 * filled_) / element * element;
  Tensor next;
  if (want >= total) {
    want = total;
    next = bundle() ? BundleCarrier(total)
                    : Tensor(dtype, Shape(described.shape().begin(), described.shape().end()));
    payload_final_ = true;
  } else {
    next = Tensor(dtype, Shape{static_cast<int64_t>(want / element)});
  }
  if (filled_ > 0) std::memcpy(next.raw_data(), payload_.raw_data(), filled_);
  payload_ = std::move(next);
  payload_capacity_ = want;
}

void FrameDecoder::PayloadDone() {
  RILL_CHECK(payload_final_, kInternal, "FrameDecoder: payload complete before its last growth");
  frame_.payload = std::move(payload_);
  payload_ = Tensor();
  payload_capacity_ = 0;
  Finish(std::move(frame_));
}

void FrameDecoder::Finish(ReceivedFrame frame) {
  frames_.push_back(std::move(frame));
  frame_ = ReceivedFrame{};
  state_ = State::kHeader;
  filled_ = 0;
}

}  // namespace rill
