#include "actors/distributed/frame_encoder.h"

#include <limits>

#include "rill/error.h"

namespace rill {

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
  const size_t meta_bytes = message.ByteSizeLong();
  RILL_CHECK(meta_bytes <= std::numeric_limits<uint32_t>::max(), kInvalidArgument, "sending ",
             message.var(), ": the message without its tensor is ", meta_bytes,
             " bytes, over 4 GiB");
  FrameHeader header;
  header.kind = static_cast<uint16_t>(FrameKind::kMessage);
  header.meta_bytes = static_cast<uint32_t>(meta_bytes);
  header.payload_bytes = payload.initialized() ? payload.bytes() : 0;
  const auto header_bytes = EncodeFrameHeader(header);
  frame.head.resize(kFrameHeaderBytes + meta_bytes);
  std::copy(header_bytes.begin(), header_bytes.end(), frame.head.begin());
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(frame.head.data()) +
                                          kFrameHeaderBytes);
  return frame;
}

OutgoingFrame EncodeHeartbeatFrame() {
  FrameHeader header;
  header.kind = static_cast<uint16_t>(FrameKind::kHeartbeat);
  const auto bytes = EncodeFrameHeader(header);
  return OutgoingFrame{std::string(bytes.begin(), bytes.end()), Tensor()};
}

}  // namespace rill
