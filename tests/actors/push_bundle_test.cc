// PUSH_BUNDLE frames (actors/distributed/wire.h): several gradients in one
// frame come back bit for bit as views into one received buffer, however the
// bytes are cut; bundles that break the rules are refused naming what is
// wrong, the sizes before a payload byte is read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <vector>

#include "actors/distributed/frame_decoder.h"
#include "actors/distributed/frame_encoder.h"
#include "actors/distributed/payload_destinations.h"
#include "actors/distributed/wire.h"
#include "rill/error.h"
#include "tests/actors/transport_testing.h"

namespace rill {
namespace push_bundle_test {

using testing::Append;
using testing::Feed;
using testing::FrameBytes;
using testing::HeaderBytes;
using testing::Ramp;
using testing::SameBytes;
using testing::TakeFrames;

const char kPeer[] = "test peer";

std::vector<ReceivedFrame> Decode(const std::vector<uint8_t>& bytes, size_t step) {
  FrameDecoder decoder(FrameLimits{}, kPeer);
  Feed(decoder, bytes, step);
  return TakeFrames(decoder);
}

std::vector<BundlePart> MixedParts() {
  return {{"fc_0.b@GRAD", Ramp(DataType::kFloat32, {3, 5}, 1)},  // 60 bytes: 4 of padding
          {"fc_0.w@GRAD", Ramp(DataType::kFloat64, {7}, 2)},     // at byte 64
          {"fc_1.w@GRAD", Ramp(DataType::kFloat32, {300, 70}, 3)},
          {"steps", Ramp(DataType::kInt64, {1}, 4)}};
}

TEST(PushBundleTest, PartsComeBackBitForBitAsViewsOfOneBufferHoweverTheBytesAreCut) {
  const std::vector<BundlePart> parts = MixedParts();
  const OutgoingFrame frame = EncodeBundleFrame(9, 1, parts);
  ASSERT_EQ(frame.bundle.size(), parts.size());
  // Sent from the values' own buffers.
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(frame.bundle[i].raw_data(), parts[i].value.raw_data());
  }
  const std::vector<uint8_t> bytes = FrameBytes(frame);
  for (size_t step : {size_t{1}, size_t{7}, size_t{4096}, bytes.size()}) {
    SCOPED_TRACE(step);
    std::vector<ReceivedFrame> frames = Decode(bytes, step);
    ASSERT_EQ(frames.size(), 1u);
    const ReceivedFrame& got = frames[0];
    EXPECT_EQ(got.message.kind(), proto::WireMessage::PUSH_BUNDLE);
    EXPECT_EQ(got.message.step(), 9);
    EXPECT_EQ(got.message.trainer_id(), 1);
    EXPECT_NO_THROW(CheckFramedWire(got.message, got.payload, kPeer));
    const std::vector<BundlePart> back = WireBundle(got.message, got.payload);
    ASSERT_EQ(back.size(), parts.size());
    const auto* begin = static_cast<const uint8_t*>(got.payload.raw_data());
    for (size_t i = 0; i < parts.size(); ++i) {
      EXPECT_EQ(back[i].var, parts[i].var);
      EXPECT_TRUE(SameBytes(back[i].value, parts[i].value)) << parts[i].var;
      const auto offset = static_cast<const uint8_t*>(back[i].value.raw_data()) - begin;
      EXPECT_EQ(offset % static_cast<std::ptrdiff_t>(kBundleAlignment), 0) << parts[i].var;
      EXPECT_TRUE(back[i].value.shares_buffer());  // a view, not a copy
    }
    EXPECT_EQ(static_cast<const uint8_t*>(back[1].value.raw_data()) - begin, 64);
  }
}

TEST(PushBundleTest, TheFrameFuzzersSeedIsABundleOfTwoParts) {
  std::ifstream in(std::filesystem::path(RILL_SOURCE_DIR) / "tests/fuzz/frame_corpus/push_bundle",
                   std::ios::binary);
  ASSERT_TRUE(in.good());
  std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
  ASSERT_GT(bytes.size(), 2u);
  bytes.erase(bytes.begin(), bytes.begin() + 2);  // the fuzzer's option and cut-count bytes
  std::vector<ReceivedFrame> frames = Decode(bytes, bytes.size());
  ASSERT_EQ(frames.size(), 1u);
  CheckFramedWire(frames[0].message, frames[0].payload, kPeer);
  const std::vector<BundlePart> parts = WireBundle(frames[0].message, frames[0].payload);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].var, "fc.b@GRAD");
  EXPECT_EQ(parts[0].value.data<float>()[2], 0.25f);
  EXPECT_EQ(parts[1].value.data<double>()[1], -0.5);
}

// The message checks: `mutate` breaks a good bundle; the error names `what`.
void ExpectRefused(void (*mutate)(proto::WireMessage*, Tensor*), const std::string& what) {
  std::vector<BundlePart> parts = MixedParts();
  proto::WireMessage message = WirePushBundle(3, parts);
  uint64_t total = 0;
  BundleLayout(message, &total, "test");
  Tensor payload = BundleCarrier(total);
  mutate(&message, &payload);
  try {
    CheckFramedWire(message, payload, kPeer);
    ADD_FAILURE() << "accepted a bundle that should fail with \"" << what << "\"";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find(what), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(kPeer), std::string::npos) << e.message();
  }
}

TEST(PushBundleTest, BundlesThatBreakTheRulesAreRefusedNamingWhatIsWrong) {
  ExpectRefused([](proto::WireMessage* m, Tensor*) { m->clear_parts(); }, "no parts");
  ExpectRefused([](proto::WireMessage* m, Tensor*) { m->mutable_parts(1)->clear_var(); },
                "part 1 has no var");
  ExpectRefused(
      [](proto::WireMessage* m, Tensor*) { m->mutable_parts(2)->set_var(m->parts(0).var()); },
      "names a variable an earlier part named");
  ExpectRefused(
      [](proto::WireMessage* m, Tensor*) { m->mutable_parts(0)->mutable_tensor()->set_data("x"); },
      "holds bytes in the message");
  ExpectRefused([](proto::WireMessage* m, Tensor*) { m->set_var("w"); }, "in parts only");
  ExpectRefused([](proto::WireMessage* m, Tensor*) { m->set_selected_rows(true); },
                "in parts only");
  ExpectRefused(
      [](proto::WireMessage* m, Tensor*) {
        m->mutable_parts(3)->mutable_tensor()->set_dtype(static_cast<proto::DataType>(77));
      },
      "invalid data type 77");
  ExpectRefused([](proto::WireMessage* m,
                   Tensor*) { m->mutable_parts(0)->mutable_tensor()->set_shape(0, -3); },
                "negative dimension");
  ExpectRefused(
      [](proto::WireMessage* m, Tensor*) {
        auto* shape = m->mutable_parts(2)->mutable_tensor()->mutable_shape();
        shape->Set(0, int64_t{1} << 40);
        shape->Set(1, int64_t{1} << 22);
      },
      "the parts' sizes overflow");
  ExpectRefused([](proto::WireMessage*, Tensor* payload) { *payload = BundleCarrier(8); },
                "but the payload is");
  ExpectRefused([](proto::WireMessage*, Tensor* payload) { *payload = Tensor(); },
                "payload is missing");
  // Parts on another kind; a bundle outside a frame.
  proto::WireMessage push = WirePush("g", 1, Ramp(DataType::kFloat32, {2}, 0));
  *push.add_parts() = WirePushBundle(1, MixedParts()).parts(0);
  EXPECT_THROW(CheckFramedWire(push, Tensor(), kPeer), Error);
  try {
    DecodeWire(EncodeWire(WirePushBundle(1, MixedParts())), WireLimits{}, kPeer);
    ADD_FAILURE() << "DecodeWire accepted a bundle";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("only in a transport frame"), std::string::npos) << e.message();
  }
}

TEST(PushBundleTest, AHeaderThatDisagreesWithThePartsIsRefusedBeforeThePayload) {
  const proto::WireMessage message = WirePushBundle(1, MixedParts());
  uint64_t total = 0;
  BundleLayout(message, &total, "test");
  const std::string meta = message.SerializeAsString();
  for (uint64_t claimed : {total - 8, total + 8, total - 1}) {
    SCOPED_TRACE(claimed);
    std::vector<uint8_t> bytes = HeaderBytes(1, static_cast<uint32_t>(meta.size()), claimed);
    Append(bytes, meta);
    FrameDecoder decoder(FrameLimits{}, kPeer);
    try {
      Feed(decoder, bytes, bytes.size());
      ADD_FAILURE() << "accepted a header claiming " << claimed;
    } catch (const Error& e) {
      EXPECT_NE(e.message().find("the tensor's dtype x shape makes"), std::string::npos)
          << e.message();
    }
    EXPECT_EQ(decoder.held_bytes(), 0u);
  }
}

TEST(PushBundleTest, EncodingRefusesWhatCannotTravel) {
  EXPECT_THROW(EncodeBundleFrame(1, 0, {{"empty", Tensor(DataType::kFloat32, {0})}}), Error);
  EXPECT_THROW(EncodeBundleFrame(1, 0, {{"none", Tensor()}}), Error);
}

TEST(TensorViewTest, ViewsShareTheBufferAndStayInside) {
  Tensor words(DataType::kInt64, {4});
  Tensor floats = words.View(DataType::kFloat32, {2, 2}, 8);
  floats.mutable_data<float>()[0] = 1.5f;
  float first;
  std::memcpy(&first, static_cast<const char*>(words.raw_data()) + 8, sizeof first);
  EXPECT_EQ(first, 1.5f);
  EXPECT_TRUE(words.shares_buffer());
  EXPECT_THROW(words.View(DataType::kFloat64, {4}, 8), Error);  // past the end
  EXPECT_THROW(words.View(DataType::kFloat64, {1}, 4), Error);  // misaligned
  EXPECT_THROW(words.View(DataType::kFloat32, {1}, 40), Error);
  EXPECT_THROW(Tensor().View(DataType::kFloat32, {1}, 0), Error);
}

}  // namespace push_bundle_test
}  // namespace rill

namespace rill {
namespace payload_destinations_test {

using push_bundle_test::MixedParts;

TEST(PayloadDestinationsTest, KnownVariablesGetTheirOwnTensorAndNothingElseDoes) {
  PayloadDestinations known;
  for (const BundlePart& part : MixedParts()) {
    known.Expect(part.var, part.value.dtype(), part.value.shape());
  }
  const Tensor gradient(DataType::kFloat32, {300, 70});
  Tensor got = known.For(1, FramedPush("fc_1.w@GRAD", 1, gradient).message);
  ASSERT_TRUE(got.initialized());
  EXPECT_EQ(got.shape(), gradient.shape());
  EXPECT_EQ(known.For(1, FramedValue("fc_1.w@GRAD", 1, gradient).message).shape(),
            gradient.shape());
  // Unknown, another shape, another dtype, selected rows, compressed, a PULL: none.
  EXPECT_FALSE(known.For(1, FramedPush("other", 1, gradient).message).initialized());
  EXPECT_FALSE(
      known.For(1, FramedPush("fc_1.w@GRAD", 1, Tensor(DataType::kFloat32, {70, 300})).message)
          .initialized());
  EXPECT_FALSE(
      known.For(1, FramedPush("fc_1.w@GRAD", 1, Tensor(DataType::kFloat64, {300, 70})).message)
          .initialized());
  SelectedRows rows;
  rows.rows = {0};
  rows.height = 300;
  rows.value = Tensor(DataType::kFloat32, {1, 70});
  EXPECT_FALSE(known.For(1, FramedPushRows("fc_1.w@GRAD", 1, rows).message).initialized());
  proto::WireMessage compressed = WirePull("fc_1.w@GRAD");
  compressed.set_kind(proto::WireMessage::PUSH);
  compressed.mutable_compressed();
  EXPECT_FALSE(known.For(1, compressed).initialized());
  EXPECT_FALSE(known.For(1, WirePull("fc_1.w@GRAD")).initialized());

  // A bundle of known parts: its carrier; the decoder reads into it.
  const OutgoingFrame frame = EncodeBundleFrame(2, 0, MixedParts());
  const proto::WireMessage bundle = WirePushBundle(2, MixedParts());
  uint64_t total = 0;
  BundleLayout(bundle, &total, "test");
  EXPECT_EQ(known.For(1, bundle).bytes(), total);
  const void* destination = nullptr;
  FrameDecoder decoder(FrameLimits{}, "test peer", [&](const proto::WireMessage& m) {
    Tensor t = known.For(1, m);
    destination = t.initialized() ? t.raw_data() : nullptr;
    return t;
  });
  const std::vector<uint8_t> bytes = testing::FrameBytes(frame);
  testing::Feed(decoder, bytes, bytes.size());
  const std::vector<ReceivedFrame> frames = testing::TakeFrames(decoder);
  ASSERT_EQ(frames.size(), 1u);
  const ReceivedFrame& received = frames[0];
  ASSERT_NE(destination, nullptr);
  EXPECT_EQ(received.payload.raw_data(), destination);
  EXPECT_TRUE(testing::SameBytes(WireBundle(received.message, received.payload)[2].value,
                                 MixedParts()[2].value));
  // One part unknown: none.
  known.Expect("fc_0.b@GRAD", DataType::kFloat32, {99});
  EXPECT_FALSE(known.For(1, bundle).initialized());
}

}  // namespace payload_destinations_test
}  // namespace rill

namespace rill {
namespace payload_destinations_test {

// A server's destinations: only on connections admitted (a trainer's, after
// its HELLO), until dismissed (closed).
TEST(PayloadDestinationsTest, AdmittedOnlyNamesDestinationsOnAdmittedConnections) {
  PayloadDestinations known(/*admitted_only=*/true);
  known.Expect("g", DataType::kFloat32, {4});
  const proto::WireMessage push = FramedPush("g", 1, Tensor(DataType::kFloat32, {4})).message;
  EXPECT_FALSE(known.For(7, push).initialized());
  known.Admit(7);
  EXPECT_TRUE(known.For(7, push).initialized());
  EXPECT_FALSE(known.For(8, push).initialized());
  known.Dismiss(7);
  EXPECT_FALSE(known.For(7, push).initialized());
}

}  // namespace payload_destinations_test
}  // namespace rill
