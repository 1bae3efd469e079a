#include "actors/distributed/frame_encoder.h"

#include <algorithm>
#include <limits>

#include "rill/error.h"

namespace rill {
namespace {

// The head of a frame: the fixed header, then `message` serialized.
std::string FrameHead(const proto::WireMessage& message, uint64_t payload_bytes,
                      const std::string& what) {
  const size_t meta_bytes = message.ByteSizeLong();
  RILL_CHECK(meta_bytes <= std::numeric_limits<uint32_t>::max(), kInvalidArgument, "sending ", what,
             ": the message without its tensor is ", meta_bytes, " bytes, over 4 GiB");
  FrameHeader header;
  header.kind = static_cast<uint16_t>(FrameKind::kMessage);
  header.meta_bytes = static_cast<uint32_t>(meta_bytes);
  header.payload_bytes = payload_bytes;
  const auto header_bytes = EncodeFrameHeader(header);
  std::string head(kFrameHeaderBytes + meta_bytes, '\0');
  std::copy(header_bytes.begin(), header_bytes.end(), head.begin());
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(head.data()) +
                                          kFrameHeaderBytes);
  return head;
}

}  // namespace

OutgoingFrame EncodeMessageFrame(proto::WireMessage message, const Tensor& payload) {
  OutgoingFrame frame;
  if (payload.initialized()) {
    RILL_CHECK(payload.place().is_cpu(), kInvalidArgument, "sending ", message.var(),
               ": the payload is on ", payload.place().ToString(), "; copy it to the CPU first");
    RILL_CHECK(message.tensor().data().empty(), kInvalidArgument, "sending ", message.var(),
               ": the message carries tensor bytes and a payload");
    proto::TensorProto* tensor = message.mutable_tensor();
    tensor->set_dtype(ToProto(payload.dtype()));
    tensor->mutable_shape()->Assign(payload.shape().begin(), payload.shape().end());
    frame.payload = payload;
  }
  frame.head = FrameHead(message, payload.initialized() ? payload.bytes() : 0, message.var());
  return frame;
}

OutgoingFrame EncodeBundleFrame(int64_t step, int trainer_id,
                                const std::vector<BundlePart>& parts) {
  proto::WireMessage message = WirePushBundle(step, parts);
  message.set_trainer_id(trainer_id);
  uint64_t total = 0;
  BundleLayout(message, &total, "a bundle to send");
  RILL_CHECK(total > 0, kInvalidArgument, "sending a bundle of ", parts.size(),
             " parts without a byte in them");
  OutgoingFrame frame;
  frame.head = FrameHead(message, total, StrCat("a bundle of ", parts.size(), " parts"));
  frame.bundle.reserve(parts.size());
  for (const BundlePart& part : parts) frame.bundle.push_back(part.value);
  return frame;
}

OutgoingFrame EncodeHeartbeatFrame() {
  FrameHeader header;
  header.kind = static_cast<uint16_t>(FrameKind::kHeartbeat);
  const auto bytes = EncodeFrameHeader(header);
  return OutgoingFrame{std::string(bytes.begin(), bytes.end()), Tensor(), {}};
}

}  // namespace rill
