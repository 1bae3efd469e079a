// Frames to send: the fixed header and the meta (a serialized
// proto::WireMessage) in one small string, and the tensor whose bytes follow,
// to be written from its own buffer (a scatter/gather write; no copy).
//
//   OutgoingFrame frame = EncodeMessageFrame(WirePull("fc_0.w_0"), Tensor());
//   OutgoingFrame push = EncodeMessageFrame(message_without_tensor, gradient);
//   OutgoingFrame bundle = EncodeBundleFrame(step, trainer_id, {{"b@GRAD", db}, {"w@GRAD", dw}});
//
// Plain functions: safe from any thread.
#pragma once

#include <string>
#include <vector>

#include "actors/distributed/frame_header.h"
#include "actors/distributed/wire.h"
#include "rill/proto/wire.pb.h"
#include "rill/tensor.h"

namespace rill {

struct OutgoingFrame {
  std::string head;  // kFrameHeaderBytes of header, then the meta
  Tensor payload;    // its bytes follow the head; not initialized when there are none
  // A PUSH_BUNDLE's values instead: their bytes follow the head one after the
  // other, each padded with zeros to a multiple of kBundleAlignment (wire.h).
  std::vector<Tensor> bundle;
};

// A kMessage frame of `message` and, when `payload` is initialized (a CPU
// tensor), its bytes: the message's `tensor` is set to the payload's dtype and
// shape without data. Throws kInvalidArgument when `message` already carries
// tensor bytes together with a payload, or the payload is not on the CPU.
OutgoingFrame EncodeMessageFrame(proto::WireMessage message, const Tensor& payload);

// A PUSH_BUNDLE frame of `parts` (dense CPU values, at least one byte in all)
// for `step`, from `trainer_id`; their bytes are written from their buffers.
OutgoingFrame EncodeBundleFrame(int64_t step, int trainer_id, const std::vector<BundlePart>& parts);

OutgoingFrame EncodeHeartbeatFrame();

}  // namespace rill
