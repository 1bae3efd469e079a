// Wire messages between Rill processes (actors/distributed/distributed.md, "Wire
// protocol"): builders for each kind, encoding to bytes, and a decoder that
// checks the bytes a peer sent before anything uses them. Plain functions,
// safe to call from any thread; no CAF here (the CAF message carrying the
// bytes is in actors/distributed/wire_atom.h).
//
//   std::string bytes = EncodeWire(WirePush("fc_0.w_0@GRAD", step, gradient));
//   ... (wire_atom, bytes) travels to the server ...
//   proto::WireMessage m = DecodeWire(bytes, limits, "trainer 1");  // throws rill::Error
//   if (m.kind() == proto::WireMessage::PUSH && !m.selected_rows()) Tensor g = WireTensor(m);
//
// Tensors travel as proto::TensorProto (runtime/io/include/rill/checkpoint.h). Measured on
// a 4 MB float32 tensor: EncodeWire(WirePush) + WireTensor(DecodeWire) takes
// 0.35-0.40 ms; a hand-written encoding that skips protobuf's two extra copies
// took 0.16 ms. A 4 MB round trip between two processes through CAF takes
// 45-70 ms on the 2-core CI machine (tools/bench/net_latency, which also times
// Rill's own transport, transport.h), so the saving is not worth a second
// format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rill/proto/wire.pb.h"
#include "rill/selected_rows.h"
#include "rill/tensor.h"
#include "rill/wire_limits.h"
#include "runtime/graph/gradient_compression.h"

namespace rill {

// -- building ---------------------------------------------------------------

// HELLO from a trainer: its id and the job's last step (0: not known). (The
// job's token is proved by the transport's handshake, before any message.)
proto::WireMessage WireHello(int trainer_id, int64_t last_step = 0);
// HELLO answered by a server: the steps it can start from, newest first.
proto::WireMessage WireHelloReply(const std::vector<int64_t>& steps);
// RESUME from a trainer: start from `step`; the server answers RESUME with the
// step it is at (WireResumed).
proto::WireMessage WireResume(int trainer_id, int64_t step);
proto::WireMessage WireResumed(int64_t step);
// PUSH of a dense value (a gradient) for `step`. The tensor must hold a value on the CPU.
proto::WireMessage WirePush(const std::string& var, int64_t step, const Tensor& value);
// PUSH of a row-sparse value.
proto::WireMessage WirePushRows(const std::string& var, int64_t step, const SelectedRows& value);
// PUSH of a compressed float32 value of `shape` (q.count elements); with
// `rows` (not null), of the selected rows' values ([rows.size(), ...] = shape).
proto::WireMessage WirePushCompressed(const std::string& var, int64_t step, const Shape& shape,
                                      const QuantizedValues& q, const SelectedRows* rows = nullptr);
proto::WireMessage WirePull(const std::string& var);
// VALUE answering a PULL: the variable as of `step`.
proto::WireMessage WireValue(const std::string& var, int64_t step, const Tensor& value);
proto::WireMessage WireHeartbeat();
proto::WireMessage WireError(const std::string& text);
proto::WireMessage WireBye(int trainer_id);
// A process group's rendezvous store (rendezvous_store.h): set `key`, ask for
// it (answered once set), and the answer.
proto::WireMessage WireStoreSet(const std::string& key, const std::string& value);
proto::WireMessage WireStoreGet(const std::string& key);
proto::WireMessage WireStoreValue(const std::string& key, const std::string& value);

// -- encoding and decoding --------------------------------------------------

// The bytes of `message`. Throws kInvalidArgument when protobuf cannot
// serialize it (over 2 GiB).
std::string EncodeWire(const proto::WireMessage& message);

// The message `bytes` hold, checked: at most limits.max_message_bytes (checked
// before parsing), a known kind, and the fields that kind needs present and
// consistent (see proto/wire.proto): no step, last_step or HELLO step is
// negative; a HELLO, BYE or RESUME has trainer_id >= 0; a
// PUSH, PULL or VALUE names a variable; a PUSH or VALUE carries a tensor
// whose bytes match its dtype and shape (a PUSH may carry a compressed tensor
// instead: known codes, a chunk >= 1, as many scales as chunks, none negative
// or infinite, as many codes as values, each in range), and, for selected
// rows, one row index in [0, height) per row of the value; an ERROR has its text;
// a STORE_SET, STORE_GET or STORE_VALUE names a key, and only a STORE_SET or
// STORE_VALUE carries a store value.
// Throws rill::Error (kParse for bytes that are not a message, kInvalidArgument
// for a message that breaks these rules) whose text names `peer` (for example
// "trainer 1 at 10.0.0.2:7164") and what is wrong.
proto::WireMessage DecodeWire(const std::string& bytes, const WireLimits& limits,
                              const std::string& peer);

// -- messages whose value travels beside them (transport frames) -----------
//
// Over the transport (transport.h) a PUSH or VALUE leaves as a frame whose meta
// is the message without its tensor bytes and whose payload is the tensor,
// written from its own buffer (frame_encoder.h); the receiver gets the message
// (its `tensor` has dtype and shape, no data) and the payload apart
// (ReceivedFrame). A compressed PUSH keeps its codes in the message.

// A message and the tensor whose bytes follow it (not initialized: none).
struct FramedWire {
  proto::WireMessage message;
  Tensor payload;
};

// PUSH of a dense value, a row-sparse value, and the VALUE answering a PULL:
// the payload shares the value's buffer (no copy; leave it unchanged until the
// frame is written).
FramedWire FramedPush(const std::string& var, int64_t step, const Tensor& value);
FramedWire FramedPushRows(const std::string& var, int64_t step, const SelectedRows& value);
FramedWire FramedValue(const std::string& var, int64_t step, const Tensor& value);

// PUSH_BUNDLE: several dense values of one step in one frame, their bytes one
// after the other in its payload, each starting at a multiple of
// kBundleAlignment bytes (zeros between them). The payload arrives as one
// tensor of 8-byte words (BundleCarrier), which WireBundle cuts into views.
constexpr uint64_t kBundleAlignment = 8;
struct BundlePart {
  std::string var;
  Tensor value;  // dense, on the CPU
};
// The message of a bundle of `parts` (dtypes and shapes, no data) for `step`.
proto::WireMessage WirePushBundle(int64_t step, const std::vector<BundlePart>& parts);
// Where each part of a bundle message starts in its payload, and (in *total)
// the payload's size. Throws kInvalidArgument naming `where` for an invalid
// dtype, a negative dimension or sizes that overflow.
std::vector<uint64_t> BundleLayout(const proto::WireMessage& message, uint64_t* total,
                                   const std::string& where);
// The tensor a bundle's payload of `total` bytes (a multiple of
// kBundleAlignment) is read into: int64 words, uninitialised.
Tensor BundleCarrier(uint64_t total);
// The parts of a bundle checked by CheckFramedWire: views into `payload`, no copy.
std::vector<BundlePart> WireBundle(const proto::WireMessage& message, const Tensor& payload);

// Checks a message that came in a frame with `payload` beside it, by the same
// rules as DecodeWire (the frame's header was already held to the size
// limits): a PUSH or VALUE's tensor either holds its bytes itself and no
// payload came, or holds none and the payload has exactly its dtype and shape;
// a compressed PUSH, and every kind that carries no value, has no payload; a
// PUSH_BUNDLE has parts, each naming another variable and describing a dense
// tensor, and a payload of exactly BundleLayout's size (DecodeWire refuses a
// bundle: it travels only in frames).
// Throws rill::Error (kInvalidArgument) naming `peer` and what is wrong.
void CheckFramedWire(const proto::WireMessage& message, const Tensor& payload,
                     const std::string& peer);

// -- payloads of a decoded PUSH or VALUE ------------------------------------

// The dense value. Throws kInvalidArgument when the message carries selected
// rows or no value.
// A compressed value is read back as float32 (the codes times their scales).
Tensor WireTensor(const proto::WireMessage& message);
// The row-sparse value. Throws kInvalidArgument when the message carries a
// dense value or no value.
SelectedRows WireRows(const proto::WireMessage& message);
// The same for a message checked by CheckFramedWire: the payload, when there
// is one, is the value itself (moved, no copy).
Tensor WireTensor(const proto::WireMessage& message, Tensor payload);
SelectedRows WireRows(const proto::WireMessage& message, Tensor payload);

// "PUSH", "PULL", ... ("kind 12" for a value the enum does not know).
std::string WireKindName(int kind);

}  // namespace rill
