#include "actors/distributed/frame_header.h"

#include "rill/error.h"

namespace rill {
namespace {

template <class T>
void Put(uint8_t* out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}

template <class T>
T Get(const uint8_t* in) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) value |= static_cast<T>(static_cast<T>(in[i]) << (8 * i));
  return value;
}

}  // namespace

std::array<uint8_t, kFrameHeaderBytes> EncodeFrameHeader(const FrameHeader& header) {
  std::array<uint8_t, kFrameHeaderBytes> bytes{};
  Put(bytes.data(), header.kind);
  Put(bytes.data() + 2, header.flags);
  Put(bytes.data() + 4, header.meta_bytes);
  Put(bytes.data() + 8, header.payload_bytes);
  return bytes;
}

FrameHeader DecodeFrameHeader(const uint8_t* bytes) {
  FrameHeader header;
  header.kind = Get<uint16_t>(bytes);
  header.flags = Get<uint16_t>(bytes + 2);
  header.meta_bytes = Get<uint32_t>(bytes + 4);
  header.payload_bytes = Get<uint64_t>(bytes + 8);
  return header;
}

void CheckFrameHeader(const FrameHeader& header, const FrameLimits& limits,
                      const std::string& peer) {
  RILL_CHECK(header.flags == 0, kInvalidArgument, "frame from ", peer, ": reserved flags ",
             header.flags, " are set");
  switch (static_cast<FrameKind>(header.kind)) {
    case FrameKind::kHeartbeat:
      RILL_CHECK(header.meta_bytes == 0 && header.payload_bytes == 0, kInvalidArgument,
                 "heartbeat frame from ", peer, " claims ", header.meta_bytes, " meta bytes and ",
                 header.payload_bytes, " payload bytes; a heartbeat carries none");
      return;
    case FrameKind::kMessage:
      RILL_CHECK(header.meta_bytes <= limits.max_meta_bytes, kInvalidArgument,
                 "message frame from ", peer, " claims ", header.meta_bytes,
                 " meta bytes, over the limit of ", limits.max_meta_bytes);
      // Written so that no sum can overflow: meta_bytes <= max_meta_bytes.
      RILL_CHECK(header.meta_bytes <= limits.max_message_bytes &&
                     header.payload_bytes <= limits.max_message_bytes - header.meta_bytes,
                 kInvalidArgument, "message frame from ", peer, " claims ", header.meta_bytes,
                 " + ", header.payload_bytes, " bytes, over the limit of ",
                 limits.max_message_bytes, " (--max-message-mb)");
      return;
  }
  Fail(ErrorCode::kInvalidArgument, "frame from ", peer, " has kind ", header.kind,
       ", not one Rill sends (1 message, 2 heartbeat)");
}

}  // namespace rill
