// The frame decoder and the handshake's pieces, without sockets: frames
// encoded by EncodeMessageFrame come back whole however the bytes are cut;
// bad headers are refused before anything is allocated; a payload grows only
// as its bytes arrive, or lands in the destination the receiver gives.
#include "actors/distributed/frame_decoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "actors/distributed/frame_encoder.h"
#include "actors/distributed/handshake.h"
#include "actors/distributed/wire.h"
#include "rill/error.h"
#include "tests/actors/transport_testing.h"

namespace rill {
namespace {

using testing::Append;
using testing::Feed;
using testing::FrameBytes;
using testing::HeaderBytes;
using testing::Ramp;
using testing::SameBytes;

const char kPeer[] = "test peer";

// A PUSH or VALUE without its value (the frame's payload carries it).
proto::WireMessage ValueMessage(proto::WireMessage::Kind kind, const std::string& var,
                                int64_t step) {
  proto::WireMessage message;
  message.set_kind(kind);
  message.set_var(var);
  message.set_step(step);
  return message;
}

TEST(FrameDecoderTest, FramesComeBackWholeHoweverTheBytesAreCut) {
  const Tensor gradient = Ramp(DataType::kFloat32, {300, 70});
  std::vector<uint8_t> stream = FrameBytes(EncodeMessageFrame(WirePull("fc_0.w_0"), Tensor()));
  const std::vector<uint8_t> push = FrameBytes(
      EncodeMessageFrame(ValueMessage(proto::WireMessage::PUSH, "fc_0.w_0@GRAD", 7), gradient));
  stream.insert(stream.end(), push.begin(), push.end());
  const std::vector<uint8_t> beat = FrameBytes(EncodeHeartbeatFrame());
  stream.insert(stream.end(), beat.begin(), beat.end());
  for (size_t step : {size_t{1}, size_t{7}, size_t{4096}, stream.size()}) {
    SCOPED_TRACE(step);
    FrameDecoder decoder(FrameLimits{}, kPeer);
    Feed(decoder, stream, step);
    ASSERT_TRUE(decoder.HasFrame());
    ReceivedFrame pull = decoder.TakeFrame();
    EXPECT_EQ(pull.kind, FrameKind::kMessage);
    EXPECT_EQ(pull.message.kind(), proto::WireMessage::PULL);
    EXPECT_EQ(pull.message.var(), "fc_0.w_0");
    EXPECT_FALSE(pull.payload.initialized());
    ASSERT_TRUE(decoder.HasFrame());
    ReceivedFrame got = decoder.TakeFrame();
    EXPECT_EQ(got.message.kind(), proto::WireMessage::PUSH);
    EXPECT_EQ(got.message.step(), 7);
    EXPECT_TRUE(got.message.tensor().data().empty());
    EXPECT_TRUE(SameBytes(got.payload, gradient));
    ASSERT_TRUE(decoder.HasFrame());
    EXPECT_EQ(decoder.TakeFrame().kind, FrameKind::kHeartbeat);
    EXPECT_FALSE(decoder.HasFrame());
    EXPECT_TRUE(decoder.idle());
  }
}

TEST(FrameDecoderTest, PayloadLandsInTheDestinationWithoutAllocating) {
  const Tensor value = Ramp(DataType::kInt64, {1000, 3});
  Tensor destination(DataType::kInt64, {1000, 3});
  const void* where = destination.raw_data();
  FrameDecoder decoder(FrameLimits{}, kPeer, [&](const proto::WireMessage& message) {
    EXPECT_EQ(message.var(), "emb");
    return destination;
  });
  Feed(decoder,
       FrameBytes(EncodeMessageFrame(ValueMessage(proto::WireMessage::VALUE, "emb", 3), value)),
       1000);
  ASSERT_TRUE(decoder.HasFrame());
  const ReceivedFrame frame = decoder.TakeFrame();
  EXPECT_EQ(frame.payload.raw_data(), where);
  EXPECT_TRUE(SameBytes(destination, value));
}

TEST(FrameDecoderTest, DestinationOfAnotherShapeIsRefused) {
  FrameDecoder decoder(FrameLimits{}, kPeer, [](const proto::WireMessage&) {
    return Tensor(DataType::kFloat32, {4, 4});
  });
  try {
    Feed(decoder,
         FrameBytes(EncodeMessageFrame(ValueMessage(proto::WireMessage::VALUE, "w", 1),
                                       Ramp(DataType::kFloat32, {4, 5}))),
         1 << 20);
    FAIL() << "accepted a payload of another shape than its destination";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("destination is float32[4, 4]"), std::string::npos)
        << error.message();
  }
}

TEST(FrameDecoderTest, HeaderClaimingFourGigabytesIsRefusedBeforeAnyAllocation) {
  FrameDecoder decoder(FrameLimits{}, kPeer);  // 256 MiB
  const std::vector<uint8_t> header = HeaderBytes(1, 100, uint64_t{0xFFFFFFF0});
  try {
    Feed(decoder, header, header.size());
    FAIL() << "accepted a 4 GB claim";
  } catch (const Error& error) {
    EXPECT_NE(error.message().find("over the limit"), std::string::npos) << error.message();
  }
  EXPECT_EQ(decoder.held_bytes(), 0u);
}

TEST(FrameDecoderTest, HeadersBreakingTheRulesAreRefused) {
  FrameLimits limits;
  limits.max_message_bytes = 1 << 20;
  limits.max_meta_bytes = 1 << 10;
  struct Case {
    std::vector<uint8_t> header;
    const char* expected;
  };
  std::vector<Case> cases = {
      {HeaderBytes(9, 10, 0), "kind 9"},
      {HeaderBytes(0, 10, 0), "kind 0"},
      {HeaderBytes(2, 1, 0), "a heartbeat carries none"},
      {HeaderBytes(1, 2000, 0), "meta bytes, over the limit"},
      {HeaderBytes(1, 10, (1 << 20) - 9), "over the limit of 1048576"},
      {HeaderBytes(1, 10, std::numeric_limits<uint64_t>::max()), "over the limit"},
  };
  Case flags{HeaderBytes(1, 10, 0), "reserved flags"};
  flags.header[2] = 1;
  cases.push_back(flags);
  for (const Case& c : cases) {
    FrameDecoder decoder(limits, kPeer);
    try {
      Feed(decoder, c.header, c.header.size());
      ADD_FAILURE() << "accepted a header expected to fail with " << c.expected;
    } catch (const Error& error) {
      EXPECT_NE(error.message().find(c.expected), std::string::npos) << error.message();
      EXPECT_NE(error.message().find(kPeer), std::string::npos) << error.message();
    }
    EXPECT_EQ(decoder.held_bytes(), 0u);
  }
}

TEST(FrameDecoderTest, PayloadThatDoesNotMatchDtypeTimesShapeIsRefusedBeforeItsBytes) {
  // The meta says float32[10] (40 bytes); the header claims 44.
  proto::WireMessage message = ValueMessage(proto::WireMessage::PUSH, "g", 1);
  message.mutable_tensor()->set_dtype(proto::FLOAT32);
  message.mutable_tensor()->add_shape(10);
  const std::string meta = message.SerializeAsString();
  std::vector<uint8_t> bytes = HeaderBytes(1, static_cast<uint32_t>(meta.size()), 44);
  Append(bytes, meta);
  FrameDecoder decoder(FrameLimits{}, kPeer);
  try {
    Feed(decoder, bytes, bytes.size());
    FAIL() << "accepted 44 payload bytes for float32[10]";
  } catch (const Error& error) {
    EXPECT_NE(
        error.message().find("claims 44 payload bytes but the tensor's dtype x shape makes 40"),
        std::string::npos)
        << error.message();
  }
  EXPECT_EQ(decoder.held_bytes(), 0u);
}

// An all-default message serializes to no bytes: its frame has an empty meta
// and still decodes (what it means is for the layer above to judge).
TEST(FrameDecoderTest, EmptyMetaIsADefaultMessage) {
  const OutgoingFrame frame = EncodeMessageFrame(proto::WireMessage(), Tensor());
  ASSERT_EQ(frame.head.size(), kFrameHeaderBytes);
  std::vector<uint8_t> bytes = FrameBytes(frame);
  const std::vector<uint8_t> beat = FrameBytes(EncodeHeartbeatFrame());
  bytes.insert(bytes.end(), beat.begin(), beat.end());
  FrameDecoder decoder(FrameLimits{}, kPeer);
  Feed(decoder, bytes, 3);
  ASSERT_TRUE(decoder.HasFrame());
  EXPECT_EQ(decoder.TakeFrame().message.kind(), proto::WireMessage::KIND_INVALID);
  ASSERT_TRUE(decoder.HasFrame());
  EXPECT_EQ(decoder.TakeFrame().kind, FrameKind::kHeartbeat);
}

TEST(FrameDecoderTest, MetaThatIsNotAMessageIsRefused) {
  std::vector<uint8_t> bytes = HeaderBytes(1, 4, 0);
  for (uint8_t b : {0xFF, 0xFF, 0xFF, 0xFF}) bytes.push_back(b);
  FrameDecoder decoder(FrameLimits{}, kPeer);
  EXPECT_THROW(Feed(decoder, bytes, bytes.size()), Error);
}

// A peer claims a 200 MB float32 payload (under the limit, and the meta
// agrees) and sends 1 MB of it: the decoder holds at most about twice that.
TEST(FrameDecoderTest, PayloadBufferGrowsOnlyAsBytesArrive) {
  const int64_t claimed_elements = 50 << 20;  // 200 MiB of float32
  proto::WireMessage message = ValueMessage(proto::WireMessage::PUSH, "g", 1);
  message.mutable_tensor()->set_dtype(proto::FLOAT32);
  message.mutable_tensor()->add_shape(claimed_elements);
  const std::string meta = message.SerializeAsString();
  std::vector<uint8_t> bytes =
      HeaderBytes(1, static_cast<uint32_t>(meta.size()), uint64_t(claimed_elements) * 4);
  Append(bytes, meta);
  const size_t sent_payload = 1 << 20;
  bytes.resize(bytes.size() + sent_payload, 0x42);
  FrameDecoder decoder(FrameLimits{}, kPeer);
  Feed(decoder, bytes, 64 << 10);
  EXPECT_FALSE(decoder.HasFrame());
  EXPECT_GE(decoder.held_bytes(), sent_payload);
  EXPECT_LE(decoder.held_bytes(), 2 * sent_payload + (64 << 10));
}

TEST(HandshakeTest, HelloRoundTripsAndBadHellosAreRefused) {
  Hello hello;
  hello.role = PeerRole::kServer;
  hello.id = 3;
  FillRandom(hello.nonce.data(), hello.nonce.size());
  const HelloBytes bytes = EncodeHello(hello);
  const Hello back = DecodeHello(bytes, kPeer);
  EXPECT_EQ(back.role, PeerRole::kServer);
  EXPECT_EQ(back.id, 3);
  EXPECT_EQ(back.nonce, hello.nonce);
  HelloBytes wrong_magic = bytes;
  wrong_magic[0] = 'X';
  EXPECT_THROW(DecodeHello(wrong_magic, kPeer), Error);
  HelloBytes wrong_version = bytes;
  wrong_version[4] = 9;
  EXPECT_THROW(DecodeHello(wrong_version, kPeer), Error);
  HelloBytes wrong_role = bytes;
  wrong_role[6] = 77;
  EXPECT_THROW(DecodeHello(wrong_role, kPeer), Error);
  HelloBytes reserved = bytes;
  reserved[13] = 1;
  EXPECT_THROW(DecodeHello(reserved, kPeer), Error);
}

TEST(HandshakeTest, MacDependsOnTokenSideHelloAndChallenge) {
  Hello hello;
  const HelloBytes bytes = EncodeHello(hello);
  Nonce challenge{};
  FillRandom(challenge.data(), challenge.size());
  const Mac mac = HandshakeMac("secret", MacSide::kClient, bytes, challenge);
  EXPECT_TRUE(SameMac(mac, HandshakeMac("secret", MacSide::kClient, bytes, challenge)));
  EXPECT_FALSE(SameMac(mac, HandshakeMac("secret2", MacSide::kClient, bytes, challenge)));
  EXPECT_FALSE(SameMac(mac, HandshakeMac("secret", MacSide::kServer, bytes, challenge)));
  Nonce other = challenge;
  other[5] ^= 1;
  EXPECT_FALSE(SameMac(mac, HandshakeMac("secret", MacSide::kClient, bytes, other)));
  HelloBytes other_hello = bytes;
  other_hello[8] ^= 1;
  EXPECT_FALSE(SameMac(mac, HandshakeMac("secret", MacSide::kClient, other_hello, challenge)));
}

}  // namespace
}  // namespace rill
