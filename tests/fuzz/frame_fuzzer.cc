// libFuzzer target: feeds arbitrary bytes to the transport's FrameDecoder, as
// a peer could after its handshake, cut into reads of sizes the input picks.
// rill::Error is the expected outcome for bad input. Whatever it is fed, the
// decoder never holds much more than twice the bytes that arrived; every frame
// it accepts encodes again to a frame that decodes to the same message and
// payload (a bundle the receiver's check accepts: to the same parts).
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "actors/distributed/frame_decoder.h"
#include "actors/distributed/frame_encoder.h"
#include "actors/distributed/wire.h"
#include "rill/error.h"

namespace {

const char kPeer[] = "fuzz peer";

rill::FrameLimits Limits() {
  rill::FrameLimits limits;
  limits.max_message_bytes = 1 << 20;  // claims up to 1 MiB pass the header check
  limits.max_meta_bytes = 4096;
  return limits;
}

void Require(bool condition) {
  if (!condition) __builtin_trap();
}

// Feeds `data` in reads of the sizes `cuts` gives in turn (1..256 bytes).
// Returns the frames decoded, or nothing when the decoder refused the bytes.
bool Decode(const uint8_t* data, size_t size, const uint8_t* cuts, size_t cut_count,
            bool with_destination, std::vector<rill::ReceivedFrame>* frames) {
  rill::FrameDecoder decoder(Limits(), kPeer, [&](const rill::proto::WireMessage& message) {
    // A destination of the described shape when asked for (as a receiver
    // that knows its variable would give), else the decoder allocates.
    if (!with_destination || message.var() != "dest") return rill::Tensor();
    const auto& t = message.tensor();
    return rill::Tensor(rill::FromProto(t.dtype()),
                        rill::Shape(t.shape().begin(), t.shape().end()));
  });
  size_t at = 0, cut = 0;
  try {
    while (at < size) {
      const std::span<uint8_t> next = decoder.NextBuffer();
      Require(!next.empty());
      size_t n = cut_count == 0 ? size : 1 + cuts[cut++ % cut_count];
      n = std::min({n, next.size(), size - at});
      std::memcpy(next.data(), data + at, n);
      decoder.Commit(n);
      at += n;
      // Growth only as bytes arrive: twice what came plus the first chunk and a meta.
      Require(decoder.held_bytes() <= 2 * at + (64 << 10) + 4096);
      while (decoder.HasFrame()) frames->push_back(decoder.TakeFrame());
    }
  } catch (const rill::Error&) {
    return false;
  }
  return true;
}

bool SamePayload(const rill::Tensor& a, const rill::Tensor& b) {
  if (a.initialized() != b.initialized()) return false;
  if (!a.initialized()) return true;
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

// Encodes `frame`'s message and payload again as they are.
std::vector<uint8_t> Encoded(const rill::OutgoingFrame& frame) {
  std::vector<uint8_t> bytes(frame.head.begin(), frame.head.end());
  auto append = [&bytes](const rill::Tensor& t) {
    const auto* p = static_cast<const uint8_t*>(t.raw_data());
    bytes.insert(bytes.end(), p, p + t.bytes());
  };
  if (frame.payload.initialized()) append(frame.payload);
  for (const rill::Tensor& part : frame.bundle) {
    append(part);
    bytes.resize((bytes.size() - frame.head.size() + rill::kBundleAlignment - 1) /
                     rill::kBundleAlignment * rill::kBundleAlignment +
                 frame.head.size());
  }
  return bytes;
}

// A bundle the wire check accepts is cut into views that lie within its
// payload, and encodes again to a bundle of the same values.
void CheckBundle(const rill::ReceivedFrame& frame) {
  try {
    rill::CheckFramedWire(frame.message, frame.payload, kPeer);
  } catch (const rill::Error&) {
    return;  // refused by the receiver's check
  }
  const std::vector<rill::BundlePart> parts = rill::WireBundle(frame.message, frame.payload);
  const auto* begin = static_cast<const uint8_t*>(frame.payload.raw_data());
  for (const rill::BundlePart& part : parts) {
    const auto* at = static_cast<const uint8_t*>(part.value.raw_data());
    Require(at >= begin && at + part.value.bytes() <= begin + frame.payload.bytes());
  }
  const std::vector<uint8_t> bytes =
      Encoded(rill::EncodeBundleFrame(frame.message.step(), frame.message.trainer_id(), parts));
  std::vector<rill::ReceivedFrame> back;
  Require(Decode(bytes.data(), bytes.size(), nullptr, 0, false, &back));
  Require(back.size() == 1);
  const std::vector<rill::BundlePart> again = rill::WireBundle(back[0].message, back[0].payload);
  Require(again.size() == parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    Require(again[i].var == parts[i].var && SamePayload(again[i].value, parts[i].value));
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

// Input: one byte of options (bit 0: give destinations), one byte N, N bytes
// of read sizes, then the stream.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const bool with_destination = data[0] & 1;
  const size_t cut_count = std::min<size_t>(data[1], size - 2);
  const uint8_t* cuts = data + 2;
  const uint8_t* stream = cuts + cut_count;
  const size_t stream_size = size - 2 - cut_count;
  std::vector<rill::ReceivedFrame> frames;
  Decode(stream, stream_size, cuts, cut_count, with_destination, &frames);
  // Every frame accepted (even before a refusal) encodes again to the same.
  for (const rill::ReceivedFrame& frame : frames) {
    if (frame.kind != rill::FrameKind::kMessage) continue;
    if (frame.message.kind() == rill::proto::WireMessage::PUSH_BUNDLE) {
      CheckBundle(frame);
      continue;
    }
    // The message keeps its tensor's dtype and shape (and any other field);
    // the encoder sets them again from the payload.
    const std::vector<uint8_t> bytes =
        Encoded(rill::EncodeMessageFrame(frame.message, frame.payload));
    std::vector<rill::ReceivedFrame> back;
    Require(Decode(bytes.data(), bytes.size(), nullptr, 0, false, &back));
    Require(back.size() == 1);
    Require(google::protobuf::util::MessageDifferencer::Equals(frame.message, back[0].message));
    Require(SamePayload(frame.payload, back[0].payload));
  }
  return 0;
}
