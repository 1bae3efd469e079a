// Frames to send: the fixed header and the meta (a serialized
// proto::WireMessage) in one small string, and the tensor whose bytes follow,
// to be written from its own buffer (a scatter/gather write; no copy).
//
//   OutgoingFrame frame = EncodeMessageFrame(WirePull("fc_0.w_0"), Tensor());
//   OutgoingFrame push = EncodeMessageFrame(message_without_tensor, gradient);
//
// Plain functions: safe from any thread.
#pragma once

#include <string>

#include "actors/distributed/frame_header.h"
#include "rill/proto/wire.pb.h"
#include "rill/tensor.h"

namespace rill {

struct OutgoingFrame {
  std::string head;  // kFrameHeaderBytes of header, then the meta
  Tensor payload;    // its bytes follow the head; not initialized when there are none
};

// A kMessage frame of `message` and, when `payload` is initialized (a CPU
// tensor), its bytes: the message's `tensor` is set to the payload's dtype and
// shape without data. Throws kInvalidArgument when `message` already carries
// tensor bytes together with a payload, or the payload is not on the CPU.
OutgoingFrame EncodeMessageFrame(proto::WireMessage message, const Tensor& payload);

OutgoingFrame EncodeHeartbeatFrame();

}  // namespace rill
