// FrameDecoder: turns the bytes a peer sends after its handshake into frames,
// trusting nothing it has not checked. The reader asks where the next bytes go
// (NextBuffer), reads at most that many there, and hands them over (Commit):
// payload bytes land straight in their destination tensor, with no copy.
//
//   FrameDecoder decoder(limits, "trainer 1 at 127.0.0.1:5000", destination);
//   while (...) {
//     std::span<uint8_t> next = decoder.NextBuffer();
//     size_t n = read(fd, next.data(), next.size());
//     decoder.Commit(n);                         // throws rill::Error on a bad frame
//     while (decoder.HasFrame()) Handle(decoder.TakeFrame());
//   }
//
// Order of checks: the fixed header (kind, flags, sizes against FrameLimits)
// before anything is allocated; the meta (a proto::WireMessage, read into a
// buffer that grows only as its bytes arrive) must describe a tensor whose
// dtype x shape is exactly the payload's size before a payload byte is read.
// The payload then goes into the tensor `destination` returns for the message
// (the receiver's own buffer, of its own size) or, when it returns none, into a
// tensor that grows as bytes arrive (memory at most about twice what arrived,
// one extra copy of the bytes received before the last growth). A PUSH_BUNDLE's
// parts (wire.h) must take exactly the header's payload bytes; their bytes
// arrive in one tensor of 8-byte words (BundleCarrier: the destination must
// return one of that size, or none).
//
// Not thread-safe: one reader at a time. After Commit throws, the decoder is
// spent (the connection is to be closed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "actors/distributed/frame_header.h"
#include "rill/proto/wire.pb.h"
#include "rill/tensor.h"

namespace rill {

struct ReceivedFrame {
  FrameKind kind = FrameKind::kHeartbeat;
  // kMessage: the message; its `tensor`, when a payload came, has the dtype and
  // shape and no data: the bytes are in `payload`.
  proto::WireMessage message;
  Tensor payload;  // not initialized when the frame had no payload
};

class FrameDecoder {
 public:
  // Returns the tensor the payload of `message` is to be read into, or a
  // default-constructed Tensor to let the decoder allocate. A tensor returned
  // must have the message's dtype and shape (else the frame is refused), and
  // nobody may touch it until the frame is taken.
  using Destination = std::function<Tensor(const proto::WireMessage& message)>;

  FrameDecoder(FrameLimits limits, std::string peer, Destination destination = {});

  // Where the next bytes go; never empty. Valid until the next Commit.
  std::span<uint8_t> NextBuffer();
  // `size` bytes (at most NextBuffer().size()) were written at NextBuffer().
  void Commit(size_t size);

  bool HasFrame() const { return !frames_.empty(); }
  ReceivedFrame TakeFrame();

  // Bytes the decoder allocated for the frame in progress (its meta, and its
  // payload unless a destination took it).
  size_t held_bytes() const;
  // True between frames: no byte of a frame is pending.
  bool idle() const { return state_ == State::kHeader && filled_ == 0; }

 private:
  enum class State { kHeader, kMeta, kPayload };

  void HeaderDone();
  void MetaDone();
  void PayloadDone();
  void GrowMeta();
  void GrowPayload();
  void Finish(ReceivedFrame frame);
  // The frame in progress is a PUSH_BUNDLE (its meta is parsed).
  bool bundle() const { return frame_.message.kind() == proto::WireMessage::PUSH_BUNDLE; }

  FrameLimits limits_;
  std::string peer_;
  Destination destination_;
  State state_ = State::kHeader;
  size_t filled_ = 0;  // bytes of the current part received
  uint8_t header_bytes_[kFrameHeaderBytes] = {};
  FrameHeader header_;
  std::vector<uint8_t> meta_;  // grows as meta bytes arrive
  ReceivedFrame frame_;
  Tensor payload_;  // the destination, or the growing buffer
  size_t payload_capacity_ = 0;
  bool payload_final_ = false;  // payload_ has the message's shape (no more growth)
  bool payload_is_destination_ = false;
  std::deque<ReceivedFrame> frames_;
};

}  // namespace rill
