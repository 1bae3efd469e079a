// The fixed header in front of every frame a peer sends after its handshake
// (actors/distributed/distributed.md, "Transport"): 16 bytes, little-endian,
//
//   offset 0  uint16 kind           FrameKind
//   offset 2  uint16 flags          0 (reserved)
//   offset 4  uint32 meta_bytes     a serialized proto::WireMessage (no tensor bytes in it)
//   offset 8  uint64 payload_bytes  the tensor's element bytes, right after the meta
//
// CheckFrameHeader judges the sizes against the limits and against what the
// kind may carry; the receiver calls it before it allocates anything for the
// frame. Plain functions and values: safe from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace rill {

constexpr size_t kFrameHeaderBytes = 16;

enum class FrameKind : uint16_t {
  kMessage = 1,    // meta: a WireMessage; payload: its tensor's bytes, or none
  kHeartbeat = 2,  // nothing: keeps an idle connection open
};

struct FrameHeader {
  uint16_t kind = 0;
  uint16_t flags = 0;
  uint32_t meta_bytes = 0;
  uint64_t payload_bytes = 0;
};

// What a receiver accepts in one frame.
struct FrameLimits {
  // The meta and the payload together (--max-message-mb).
  uint64_t max_message_bytes = uint64_t{256} << 20;
  // The meta alone: the message without its tensor (a selected-rows push
  // carries its row indices there).
  uint64_t max_meta_bytes = uint64_t{16} << 20;
};

std::array<uint8_t, kFrameHeaderBytes> EncodeFrameHeader(const FrameHeader& header);
FrameHeader DecodeFrameHeader(const uint8_t* bytes);  // reads kFrameHeaderBytes

// Throws rill::Error (kInvalidArgument) naming `peer` when the kind is not one
// Rill sends, a reserved flag is set, a heartbeat carries anything, or the
// sizes pass `limits`. A message's meta may be empty: a WireMessage whose
// fields all have their default values serializes to nothing.
void CheckFrameHeader(const FrameHeader& header, const FrameLimits& limits,
                      const std::string& peer);

}  // namespace rill
