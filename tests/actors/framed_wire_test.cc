// Wire messages whose value travels beside them, as the transport carries
// them: built by FramedPush/FramedPushRows/FramedValue, framed by
// EncodeMessageFrame, cut apart by FrameDecoder, then checked by
// CheckFramedWire and read by WireTensor/WireRows with the payload. The
// values must come back bit for bit, and everything DecodeWire refuses in
// bytes must be refused here too, naming the peer.
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "actors/distributed/frame_decoder.h"
#include "actors/distributed/frame_encoder.h"
#include "actors/distributed/transport_options.h"
#include "actors/distributed/wire.h"
#include "rill/error.h"
#include "tests/testing/training.h"

namespace rill {
// Named after the file, not anonymous: the sanitizer builds compile test files
// together (unity builds), where helpers of the same name would collide.
namespace framed_wire_test {

using proto::WireMessage;
using testing::ExpectSameTensor;

const char kPeer[] = "trainer 2 at 10.1.2.3:7164";

Tensor Ramp(DataType dtype, const Shape& shape) {
  Tensor tensor(dtype, shape);
  VisitDataType(dtype, [&]<class T>() {
    T* data = tensor.mutable_data<T>();
    for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = static_cast<T>(i % 251) - T(7);
  });
  return tensor;
}

// `framed` through a frame's bytes and a decoder: what the receiver gets.
ReceivedFrame ThroughFrame(const FramedWire& framed) {
  const OutgoingFrame frame = EncodeMessageFrame(framed.message, framed.payload);
  std::vector<uint8_t> bytes(frame.head.begin(), frame.head.end());
  if (frame.payload.initialized()) {
    const auto* data = static_cast<const uint8_t*>(frame.payload.raw_data());
    bytes.insert(bytes.end(), data, data + frame.payload.bytes());
  }
  FrameDecoder decoder(FrameLimits{}, kPeer);
  size_t at = 0;
  while (at < bytes.size()) {
    const std::span<uint8_t> next = decoder.NextBuffer();
    const size_t n = std::min(next.size(), bytes.size() - at);
    std::memcpy(next.data(), bytes.data() + at, n);
    decoder.Commit(n);
    at += n;
  }
  EXPECT_TRUE(decoder.HasFrame());
  return decoder.TakeFrame();
}

// Expects CheckFramedWire to refuse the message and payload with an error
// naming the peer and containing each of `parts`.
void ExpectRefused(const WireMessage& message, const Tensor& payload,
                   std::initializer_list<std::string> parts) {
  try {
    CheckFramedWire(message, payload, kPeer);
    ADD_FAILURE() << "accepted; expected an error containing " << *parts.begin();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(e.message().find(kPeer), std::string::npos) << e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(e.message().find(part), std::string::npos)
          << "no \"" << part << "\" in " << e.what();
    }
  }
}

TEST(FramedWireTest, DenseValuesArriveBitForBitWithoutACopyOnEitherSide) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64, DataType::kInt64}) {
    const Tensor value = Ramp(dtype, {3, 5});
    const FramedWire push = FramedPush("fc.w@GRAD", 4, value);
    // The sender's payload is the value's own buffer.
    EXPECT_EQ(push.payload.raw_data(), value.raw_data());
    EXPECT_TRUE(push.message.tensor().data().empty());
    ReceivedFrame frame = ThroughFrame(push);
    CheckFramedWire(frame.message, frame.payload, kPeer);
    EXPECT_EQ(frame.message.kind(), WireMessage::PUSH);
    EXPECT_EQ(frame.message.var(), "fc.w@GRAD");
    EXPECT_EQ(frame.message.step(), 4);
    const void* received = frame.payload.raw_data();
    const Tensor got = WireTensor(frame.message, std::move(frame.payload));
    EXPECT_EQ(got.raw_data(), received);  // the receiver's value is the payload itself
    ExpectSameTensor(got, value);
  }
  const Tensor param = Ramp(DataType::kFloat32, {7});
  ReceivedFrame frame = ThroughFrame(FramedValue("fc.w", 9, param));
  CheckFramedWire(frame.message, frame.payload, kPeer);
  EXPECT_EQ(frame.message.kind(), WireMessage::VALUE);
  ExpectSameTensor(WireTensor(frame.message, std::move(frame.payload)), param);
}

TEST(FramedWireTest, SelectedRowsArriveWithTheirRows) {
  SelectedRows rows;
  rows.rows = {4, 0, 4};
  rows.height = 6;
  rows.value = Ramp(DataType::kFloat32, {3, 2});
  ReceivedFrame frame = ThroughFrame(FramedPushRows("emb@GRAD", 1, rows));
  CheckFramedWire(frame.message, frame.payload, kPeer);
  const SelectedRows got = WireRows(frame.message, std::move(frame.payload));
  EXPECT_EQ(got.rows, rows.rows);
  EXPECT_EQ(got.height, 6);
  ExpectSameTensor(got.value, rows.value);
  FramedWire out_of_range = FramedPushRows("emb@GRAD", 1, rows);
  out_of_range.message.set_rows(2, 6);
  ExpectRefused(out_of_range.message, out_of_range.payload, {"row 6 (index 2) is outside [0, 6)"});
}

TEST(FramedWireTest, MessagesWithTheirBytesInsideStillWork) {
  // A compressed PUSH carries its codes in the message, and a control message
  // carries nothing: no payload comes beside them.
  QuantizedValues q;
  q.kind = GradientCompression::kInt8;
  q.chunk = 2;
  q.count = 3;
  q.scales = {0.5f, 1.0f};
  q.codes = std::string("\x02\xfe\x01", 3);
  const WireMessage compressed = WirePushCompressed("w@GRAD", 0, {3}, q);
  ReceivedFrame frame = ThroughFrame({compressed, Tensor()});
  EXPECT_FALSE(frame.payload.initialized());
  CheckFramedWire(frame.message, frame.payload, kPeer);
  // The same values as the message decoded from its bytes (wire_test checks those).
  ExpectSameTensor(WireTensor(frame.message, std::move(frame.payload)),
                   WireTensor(DecodeWire(EncodeWire(compressed), WireLimits{}, kPeer)));
  ReceivedFrame pull = ThroughFrame({WirePull("w"), Tensor()});
  CheckFramedWire(pull.message, pull.payload, kPeer);
  // A whole old-style message (bytes inside the tensor) in a frame decodes too.
  const Tensor value = Ramp(DataType::kFloat32, {4});
  ReceivedFrame inside = ThroughFrame({WirePush("w@GRAD", 0, value), Tensor()});
  CheckFramedWire(inside.message, inside.payload, kPeer);
  ExpectSameTensor(WireTensor(inside.message, std::move(inside.payload)), value);
}

TEST(FramedWireTest, PayloadsThatDoNotFitTheMessageAreRefused) {
  const FramedWire push = FramedPush("w@GRAD", 0, Ramp(DataType::kFloat32, {2, 3}));
  ExpectRefused(push.message, Ramp(DataType::kFloat32, {3, 2}),
                {"\"w@GRAD\"", "float32[2, 3] but its payload is"});
  ExpectRefused(push.message, Ramp(DataType::kInt32, {2, 3}), {"but its payload is"});
  // Without its payload the tensor holds no bytes for its shape.
  ExpectRefused(push.message, Tensor(), {"float32[2, 3] but holds 0 bytes"});
  // Bytes inside and a payload beside.
  WireMessage both = WirePush("w@GRAD", 0, Ramp(DataType::kFloat32, {2, 3}));
  ExpectRefused(both, push.payload, {"holds 24 bytes and a payload came beside it"});
  // A payload beside a message that carries no value, or a compressed one.
  ExpectRefused(WirePull("w"), push.payload, {"a PULL carries no value"});
  ExpectRefused(WireHeartbeat(), push.payload, {"a HEARTBEAT carries no value"});
  QuantizedValues q;
  q.kind = GradientCompression::kInt8;
  q.chunk = 6;
  q.count = 6;
  q.scales = {1.0f};
  q.codes = std::string(6, '\x01');
  ExpectRefused(WirePushCompressed("w@GRAD", 0, {2, 3}, q), push.payload,
                {"a compressed value and a payload of float32[2, 3] beside it"});
  // The message's own rules still hold.
  FramedWire unnamed = push;
  unnamed.message.clear_var();
  ExpectRefused(unnamed.message, unnamed.payload, {"no var"});
  FramedWire negative = push;
  negative.message.set_step(-1);
  ExpectRefused(negative.message, negative.payload, {"negative step -1"});
  FramedWire no_dtype = push;
  no_dtype.message.mutable_tensor()->set_dtype(proto::DT_INVALID);
  ExpectRefused(no_dtype.message, no_dtype.payload, {"invalid data type 0"});
}

TEST(FramedWireTest, BuildersRefuseValuesThatCannotTravel) {
  EXPECT_THROW(FramedPush("w@GRAD", 0, Tensor()), Error);
  SelectedRows rows;
  rows.rows = {0, 1};
  rows.height = 3;
  rows.value = Ramp(DataType::kFloat32, {3, 2});  // three value rows for two indices
  EXPECT_THROW(FramedPushRows("emb@GRAD", 0, rows), Error);
}

// A transport's options hold WireLimits (what the servers' and trainers'
// flags set); the frame decoder gets its part of them, with the same
// defaults as its own.
TEST(FramedWireTest, TheDecodersLimitsAreTheTransportsWireLimits) {
  const FrameLimits decoder_defaults;
  const TransportOptions defaults;
  EXPECT_EQ(defaults.frame_limits().max_message_bytes, decoder_defaults.max_message_bytes);
  EXPECT_EQ(defaults.frame_limits().max_meta_bytes, decoder_defaults.max_meta_bytes);
  TransportOptions set;
  set.limits.max_message_bytes = 1 << 20;
  set.limits.max_meta_bytes = 1 << 12;
  EXPECT_EQ(set.frame_limits().max_message_bytes, uint64_t{1} << 20);
  EXPECT_EQ(set.frame_limits().max_meta_bytes, uint64_t{1} << 12);
}

}  // namespace framed_wire_test
}  // namespace rill
