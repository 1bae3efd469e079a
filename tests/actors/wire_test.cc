// Wire messages: every kind survives encode and decode, values bit for bit;
// DecodeWire refuses bytes that are not a message, over the limit, or a
// message missing what its kind needs, naming the peer.
#include "actors/distributed/wire.h"

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <random>
#include <string>

#include "rill/error.h"
#include "tests/testing/training.h"

namespace rill {
namespace {

using proto::WireMessage;
using testing::ExpectSameTensor;

const char kPeer[] = "trainer 3 at 10.1.2.3:7164";

// A tensor whose elements are 0.5 * i (float) or i * 1000003 (integers).
Tensor Iota(DataType dtype, const Shape& shape) {
  Tensor tensor(dtype, shape);
  VisitDataType(dtype, [&]<class T>() {
    T* data = tensor.mutable_data<T>();
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      data[i] = std::is_floating_point_v<T> ? static_cast<T>(0.5 * i) : static_cast<T>(i * 1000003);
    }
  });
  return tensor;
}

WireMessage RoundTrip(const WireMessage& message) {
  return DecodeWire(EncodeWire(message), WireLimits{}, kPeer);
}

// Expects DecodeWire to refuse `bytes` with `code` and a message naming the
// peer and containing each of `parts`.
void ExpectRejected(const std::string& bytes, ErrorCode code,
                    std::initializer_list<std::string> parts, const WireLimits& limits = {}) {
  try {
    DecodeWire(bytes, limits, kPeer);
    ADD_FAILURE() << "accepted; expected an error containing " << *parts.begin();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(e.message().find(kPeer), std::string::npos) << e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(e.message().find(part), std::string::npos)
          << "no \"" << part << "\" in " << e.what();
    }
  }
}

SelectedRows SomeRows() {
  SelectedRows rows;
  rows.rows = {4, 0, 4};
  rows.height = 6;
  rows.value = Iota(DataType::kFloat32, {3, 2});
  return rows;
}

TEST(WireTest, DenseValuesSurviveEncodeAndDecodeBitForBit) {
  for (DataType dtype :
       {DataType::kFloat32, DataType::kInt64, DataType::kFloat64, DataType::kInt32}) {
    for (const Shape& shape : {Shape{}, Shape{1}, Shape{7}, Shape{3, 4}, Shape{2, 3, 5}, Shape{0},
                               Shape{0, 5}, Shape{1024, 1024}}) {
      SCOPED_TRACE(DataTypeName(dtype) + ShapeToString(shape));
      const Tensor value = Iota(dtype, shape);
      const WireMessage push = RoundTrip(WirePush("fc_0.w_0@GRAD", 12, value));
      EXPECT_EQ(push.kind(), WireMessage::PUSH);
      EXPECT_EQ(push.var(), "fc_0.w_0@GRAD");
      EXPECT_EQ(push.step(), 12);
      ExpectSameTensor(WireTensor(push), value);

      const WireMessage reply = RoundTrip(WireValue("fc_0.w_0", 13, value));
      EXPECT_EQ(reply.kind(), WireMessage::VALUE);
      EXPECT_EQ(reply.step(), 13);
      ExpectSameTensor(WireTensor(reply), value);
    }
  }
}

TEST(WireTest, SelectedRowsSurviveEncodeAndDecode) {
  const SelectedRows sent = SomeRows();
  const WireMessage message = RoundTrip(WirePushRows("emb@GRAD", 5, sent));
  EXPECT_TRUE(message.selected_rows());
  const SelectedRows got = WireRows(message);
  EXPECT_EQ(got.rows, sent.rows);
  EXPECT_EQ(got.height, 6);
  ExpectSameTensor(got.value, sent.value);

  SelectedRows none;  // no row selected this step
  none.height = 10;
  none.value = Iota(DataType::kFloat64, {0, 4});
  const SelectedRows empty = WireRows(RoundTrip(WirePushRows("emb@GRAD", 6, none)));
  EXPECT_TRUE(empty.rows.empty());
  EXPECT_EQ(empty.height, 10);
  ExpectSameTensor(empty.value, none.value);
}

TEST(WireTest, ControlMessagesSurviveEncodeAndDecode) {
  const WireMessage hello = RoundTrip(WireHello(2, 500));
  EXPECT_EQ(hello.kind(), WireMessage::HELLO);
  EXPECT_EQ(hello.trainer_id(), 2);
  EXPECT_EQ(hello.last_step(), 500);
  const WireMessage reply = RoundTrip(WireHelloReply({40, 30}));
  EXPECT_EQ(std::vector<int64_t>(reply.steps().begin(), reply.steps().end()),
            (std::vector<int64_t>{40, 30}));
  const WireMessage resume = RoundTrip(WireResume(1, 30));
  EXPECT_EQ(resume.kind(), WireMessage::RESUME);
  EXPECT_EQ(resume.trainer_id(), 1);
  EXPECT_EQ(resume.step(), 30);
  EXPECT_EQ(RoundTrip(WireResumed(30)).step(), 30);
  const WireMessage pull = RoundTrip(WirePull("fc_0.b_0"));
  EXPECT_EQ(pull.kind(), WireMessage::PULL);
  EXPECT_EQ(pull.var(), "fc_0.b_0");
  EXPECT_EQ(RoundTrip(WireHeartbeat()).kind(), WireMessage::HEARTBEAT);
  EXPECT_EQ(RoundTrip(WireError("server 0: no variable \"x\"")).error(),
            "server 0: no variable \"x\"");
  const WireMessage bye = RoundTrip(WireBye(1));
  EXPECT_EQ(bye.kind(), WireMessage::BYE);
  EXPECT_EQ(bye.trainer_id(), 1);
}

TEST(WireTest, PayloadOfTheOtherFormIsRefused) {
  const WireMessage dense = RoundTrip(WirePush("w@GRAD", 0, Iota(DataType::kFloat32, {2})));
  const WireMessage rows = RoundTrip(WirePushRows("emb@GRAD", 0, SomeRows()));
  EXPECT_THROW(WireRows(dense), Error);
  EXPECT_THROW(WireTensor(rows), Error);
  EXPECT_THROW(WireTensor(RoundTrip(WirePull("w"))), Error);
}

TEST(WireTest, BuildersRefuseValuesThatCannotTravel) {
  EXPECT_THROW(WirePush("w@GRAD", 0, Tensor()), Error);  // no value
  SelectedRows mismatched = SomeRows();
  mismatched.rows.pop_back();
  EXPECT_THROW(WirePushRows("emb@GRAD", 0, mismatched), Error);
}

TEST(WireTest, EveryTruncationOfAValueIsRejected) {
  for (const std::string& bytes :
       {EncodeWire(WirePush("w@GRAD", 3, Iota(DataType::kInt64, {4, 3}))),
        EncodeWire(WirePushRows("emb@GRAD", 3, SomeRows()))}) {
    for (size_t size = 0; size < bytes.size(); ++size) {
      SCOPED_TRACE(size);
      EXPECT_THROW(DecodeWire(bytes.substr(0, size), WireLimits{}, kPeer), Error);
    }
  }
  const std::string bytes = EncodeWire(WirePush("w@GRAD", 3, Iota(DataType::kFloat32, {64})));
  ExpectRejected(bytes.substr(0, bytes.size() - 1), ErrorCode::kParse, {"do not parse"});
}

TEST(WireTest, GarbageIsRejectedWithRillErrorsOnly) {
  ExpectRejected("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", ErrorCode::kParse,
                 {"11 bytes that do not parse"});
  ExpectRejected("GET / HTTP/1.1\r\n\r\n", ErrorCode::kParse, {"do not parse"});
  std::mt19937 random(7);
  int rejected = 0;
  const int samples = 2000;
  for (int i = 0; i < samples; ++i) {
    std::string bytes(random() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    try {
      DecodeWire(bytes, WireLimits{}, kPeer);
    } catch (const Error& e) {  // anything else escapes and fails the test
      EXPECT_NE(e.message().find(kPeer), std::string::npos) << e.what();
      ++rejected;
    }
  }
  // A few random strings are valid messages (a HEARTBEAT with unknown
  // fields); almost all are not.
  EXPECT_GT(rejected, samples * 95 / 100);
}

TEST(WireTest, OversizedMessagesAreRejectedBeforeParsing) {
  WireLimits small;
  small.max_message_bytes = 64;
  const std::string big = EncodeWire(WirePush("w@GRAD", 0, Iota(DataType::kFloat32, {100})));
  ExpectRejected(big, ErrorCode::kInvalidArgument,
                 {std::to_string(big.size()) + " bytes, over the limit of 64"}, small);
  // Garbage over the limit is refused for its size, so it was never parsed.
  ExpectRejected(std::string(65, '\xff'), ErrorCode::kInvalidArgument, {"over the limit"}, small);
  EXPECT_NO_THROW(DecodeWire(EncodeWire(WirePull("w")), small, kPeer));
}

TEST(WireTest, MessagesWithoutAKnownKindAreRejected) {
  WireMessage unknown = WireHeartbeat();
  unknown.set_kind(static_cast<WireMessage::Kind>(42));
  ExpectRejected(EncodeWire(unknown), ErrorCode::kInvalidArgument, {"unknown kind 42"});
  WireMessage none = WirePull("w");
  none.clear_kind();
  ExpectRejected(EncodeWire(none), ErrorCode::kInvalidArgument, {"has no kind"});
  ExpectRejected("", ErrorCode::kInvalidArgument, {"has no kind"});
}

TEST(WireTest, MessagesMissingWhatTheirKindNeedsAreRejected) {
  ExpectRejected(EncodeWire(WirePush("", 0, Iota(DataType::kFloat32, {2}))),
                 ErrorCode::kInvalidArgument, {"PUSH", "no var"});
  ExpectRejected(EncodeWire(WirePull("")), ErrorCode::kInvalidArgument, {"PULL", "no var"});
  WireMessage no_tensor = WirePush("w@GRAD", 0, Iota(DataType::kFloat32, {2}));
  no_tensor.clear_tensor();
  ExpectRejected(EncodeWire(no_tensor), ErrorCode::kInvalidArgument, {"\"w@GRAD\"", "no tensor"});
  ExpectRejected(EncodeWire(WireHello(-1)), ErrorCode::kInvalidArgument,
                 {"HELLO", "negative trainer_id -1"});
  ExpectRejected(EncodeWire(WireError("")), ErrorCode::kInvalidArgument, {"no error text"});
  ExpectRejected(EncodeWire(WireResume(-1, 3)), ErrorCode::kInvalidArgument,
                 {"RESUME", "negative trainer_id -1"});
  ExpectRejected(EncodeWire(WireResume(0, -3)), ErrorCode::kInvalidArgument,
                 {"RESUME", "negative step -3"});
  ExpectRejected(EncodeWire(WireHelloReply({20, -1})), ErrorCode::kInvalidArgument,
                 {"HELLO", "negative step -1 in steps"});
  ExpectRejected(EncodeWire(WireHello(0, -5)), ErrorCode::kInvalidArgument,
                 {"negative last_step -5"});
  WireMessage pull_with_steps = WirePull("w");
  pull_with_steps.add_steps(3);
  ExpectRejected(EncodeWire(pull_with_steps), ErrorCode::kInvalidArgument,
                 {"only a HELLO carries steps"});
  ExpectRejected(EncodeWire(WirePush("w@GRAD", -2, Iota(DataType::kFloat32, {2}))),
                 ErrorCode::kInvalidArgument, {"negative step -2"});
  WireMessage pull_with_value = WirePull("w");
  *pull_with_value.mutable_tensor() = WirePush("w", 0, Iota(DataType::kFloat32, {2})).tensor();
  ExpectRejected(EncodeWire(pull_with_value), ErrorCode::kInvalidArgument,
                 {"a PULL carries no value"});
  ExpectRejected(EncodeWire(WireStoreSet("", "v")), ErrorCode::kInvalidArgument,
                 {"STORE_SET", "no key"});
  ExpectRejected(EncodeWire(WireStoreGet("")), ErrorCode::kInvalidArgument,
                 {"STORE_GET", "no key"});
  WireMessage get_with_value = WireStoreGet("k");
  get_with_value.set_store_value("v");
  ExpectRejected(EncodeWire(get_with_value), ErrorCode::kInvalidArgument,
                 {"only a STORE_SET or STORE_VALUE carries a store value"});
  WireMessage standing_push = WirePush("w@GRAD", 1, Iota(DataType::kFloat32, {2}));
  standing_push.set_standing(true);
  ExpectRejected(EncodeWire(standing_push), ErrorCode::kInvalidArgument,
                 {"only a PULL or VALUE is standing"});
  WireMessage standing_pull = WirePull("w");
  standing_pull.set_standing(true);
  EXPECT_TRUE(DecodeWire(EncodeWire(standing_pull), WireLimits{}, kPeer).standing());
}

TEST(WireTest, TensorBytesMustMatchDtypeAndShape) {
  WireMessage short_data = WirePush("w@GRAD", 0, Iota(DataType::kFloat32, {2, 3}));
  short_data.mutable_tensor()->mutable_data()->pop_back();
  ExpectRejected(EncodeWire(short_data), ErrorCode::kInvalidArgument,
                 {"\"w@GRAD\"", "float32[2, 3] but holds 23 bytes"});
  WireMessage negative = WirePush("w@GRAD", 0, Iota(DataType::kFloat32, {0}));
  negative.mutable_tensor()->set_shape(0, -4);
  ExpectRejected(EncodeWire(negative), ErrorCode::kInvalidArgument, {"negative dimension"});
  WireMessage huge = WirePush("w@GRAD", 0, Iota(DataType::kFloat32, {1}));
  huge.mutable_tensor()->set_shape(0, int64_t{1} << 40);
  huge.mutable_tensor()->add_shape(int64_t{1} << 40);
  ExpectRejected(EncodeWire(huge), ErrorCode::kInvalidArgument, {"shape too large"});
  WireMessage no_dtype = WirePush("w@GRAD", 0, Iota(DataType::kFloat32, {1}));
  no_dtype.mutable_tensor()->set_dtype(proto::DT_INVALID);
  ExpectRejected(EncodeWire(no_dtype), ErrorCode::kInvalidArgument, {"invalid data type 0"});
}

TEST(WireTest, SelectedRowsMustBeInRangeAndOnePerTensorRow) {
  WireMessage out_of_range = WirePushRows("emb@GRAD", 0, SomeRows());
  out_of_range.set_rows(1, 6);
  ExpectRejected(EncodeWire(out_of_range), ErrorCode::kInvalidArgument,
                 {"\"emb@GRAD\"", "row 6 (index 1) is outside [0, 6)"});
  WireMessage negative = WirePushRows("emb@GRAD", 0, SomeRows());
  negative.set_rows(0, -1);
  ExpectRejected(EncodeWire(negative), ErrorCode::kInvalidArgument, {"row -1 (index 0)"});
  WireMessage extra_row = WirePushRows("emb@GRAD", 0, SomeRows());
  extra_row.add_rows(1);
  ExpectRejected(EncodeWire(extra_row), ErrorCode::kInvalidArgument,
                 {"4 selected rows but the tensor has shape [3, 2]"});
  WireMessage dense_with_rows = WirePush("w@GRAD", 0, Iota(DataType::kFloat32, {2}));
  dense_with_rows.add_rows(0);
  ExpectRejected(EncodeWire(dense_with_rows), ErrorCode::kInvalidArgument,
                 {"a dense value with 1 rows"});
}

// A compressed PUSH reads back as float32: the codes times their scales.
TEST(WireTest, CompressedValuesReadBackAsTheirCodesSay) {
  const Tensor gradient = Iota(DataType::kFloat32, {5, 111});  // 555 values: 3 chunks
  for (GradientCompression kind : {GradientCompression::kInt8, GradientCompression::kInt4}) {
    const QuantizedValues q = Quantize(gradient.data<float>(), 555, kind);
    const std::string bytes = EncodeWire(WirePushCompressed("w@GRAD", 7, {5, 111}, q));
    EXPECT_LT(bytes.size(), gradient.bytes() / (kind == GradientCompression::kInt8 ? 3 : 6));
    const WireMessage decoded = DecodeWire(bytes, WireLimits{}, kPeer);
    Tensor expected(DataType::kFloat32, {5, 111});
    Dequantize(q, expected.mutable_data<float>());
    ExpectSameTensor(WireTensor(decoded), expected);
    EXPECT_EQ(decoded.step(), 7);
  }
  SelectedRows rows = SomeRows();
  const QuantizedValues q =
      Quantize(rows.value.data<float>(), rows.value.numel(), GradientCompression::kInt4);
  const WireMessage decoded =
      DecodeWire(EncodeWire(WirePushCompressed("emb@GRAD", 1, rows.value.shape(), q, &rows)),
                 WireLimits{}, kPeer);
  const SelectedRows back = WireRows(decoded);
  EXPECT_EQ(back.rows, rows.rows);
  EXPECT_EQ(back.height, rows.height);
  Tensor expected(DataType::kFloat32, rows.value.shape());
  Dequantize(q, expected.mutable_data<float>());
  ExpectSameTensor(back.value, expected);
  EXPECT_THROW(WirePushCompressed("w", 0, {4}, q), Error);  // 6 values for shape [4]
  // An empty value: no scales, no codes (the fuzzer's first find: a memcpy
  // from an empty vector).
  const QuantizedValues none = Quantize(nullptr, 0, GradientCompression::kInt8);
  const WireMessage empty =
      DecodeWire(EncodeWire(WirePushCompressed("e@GRAD", 0, {0, 3}, none)), WireLimits{}, kPeer);
  EXPECT_EQ(WireTensor(empty).shape(), (Shape{0, 3}));
}

TEST(WireTest, MalformedCompressedValuesAreRejected) {
  const Tensor gradient = Iota(DataType::kFloat32, {300});
  const QuantizedValues q8 = Quantize(gradient.data<float>(), 300, GradientCompression::kInt8);
  const QuantizedValues q4 = Quantize(gradient.data<float>(), 299, GradientCompression::kInt4);
  auto push8 = [&] { return WirePushCompressed("w@GRAD", 0, {300}, q8); };
  auto push4 = [&] { return WirePushCompressed("w@GRAD", 0, {299}, q4); };
  WireMessage m = push8();
  m.mutable_compressed()->set_codes(proto::CompressedTensor::CODES_INVALID);
  ExpectRejected(EncodeWire(m), ErrorCode::kInvalidArgument, {"\"w@GRAD\"", "unknown codes 0"});
  m = push8();
  m.mutable_compressed()->set_chunk(0);
  ExpectRejected(EncodeWire(m), ErrorCode::kInvalidArgument, {"compression chunk 0"});
  m = push8();
  m.mutable_compressed()->mutable_data()->pop_back();
  ExpectRejected(EncodeWire(m), ErrorCode::kInvalidArgument,
                 {"float32[300] but holds 299 bytes of int8 codes"});
  m = push8();
  m.mutable_compressed()->set_dims(0, int64_t{1} << 62);
  ExpectRejected(EncodeWire(m), ErrorCode::kInvalidArgument, {"int8 codes"});
  m = push8();
  m.mutable_compressed()->mutable_scales()->append("abcd");
  ExpectRejected(EncodeWire(m), ErrorCode::kInvalidArgument,
                 {"2 chunks of 256 values need 8 bytes of scales, got 12"});
  m = push8();
  const float negative = -1.0f, infinite = INFINITY;
  m.mutable_compressed()->mutable_scales()->replace(4, 4, reinterpret_cast<const char*>(&negative),
                                                    4);
  ExpectRejected(EncodeWire(m), ErrorCode::kInvalidArgument, {"scale 1 is -1"});
  m = push8();
  m.mutable_compressed()->mutable_scales()->replace(0, 4, reinterpret_cast<const char*>(&infinite),
                                                    4);
  ExpectRejected(EncodeWire(m), ErrorCode::kInvalidArgument, {"scale 0 is inf"});
  m = push8();
  (*m.mutable_compressed()->mutable_data())[17] = static_cast<char>(-128);
  ExpectRejected(EncodeWire(m), ErrorCode::kInvalidArgument,
                 {"code byte 17 (128) is outside [-127, 127]"});
  m = push4();
  (*m.mutable_compressed()->mutable_data())[3] = static_cast<char>(0x08);  // low nibble -8
  ExpectRejected(EncodeWire(m), ErrorCode::kInvalidArgument,
                 {"code byte 3 (8) is outside [-7, 7]"});
  m = push4();
  m.mutable_compressed()->mutable_data()->back() |= static_cast<char>(0x10);  // 299 values: odd
  ExpectRejected(EncodeWire(m), ErrorCode::kInvalidArgument, {"or has a high nibble"});
  m = push8();
  *m.mutable_tensor() = WirePush("w@GRAD", 0, gradient).tensor();
  ExpectRejected(EncodeWire(m), ErrorCode::kInvalidArgument,
                 {"both a tensor and a compressed tensor"});
  m = push8();
  m.set_kind(WireMessage::VALUE);
  ExpectRejected(EncodeWire(m), ErrorCode::kInvalidArgument,
                 {"only a PUSH carries a compressed tensor"});
  m = push8();
  m.set_selected_rows(true);
  m.set_height(10);
  ExpectRejected(EncodeWire(m), ErrorCode::kInvalidArgument,
                 {"0 selected rows but the tensor has shape [300]"});
  m = WirePull("w");
  *m.mutable_compressed() = push8().compressed();
  ExpectRejected(EncodeWire(m), ErrorCode::kInvalidArgument, {"a PULL carries no value"});
}

TEST(WireTest, KindNamesIncludeUnknownValues) {
  EXPECT_EQ(WireKindName(WireMessage::PUSH), "PUSH");
  EXPECT_EQ(WireKindName(99), "kind 99");
}

}  // namespace
}  // namespace rill
