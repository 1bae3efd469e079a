// The wire fuzzer's seeds (tests/fuzz/wire_corpus/): one encoded message of
// each kind, checked here to decode to what the builders make, so a change of
// the format cannot leave the fuzzer starting from stale bytes. To write them
// again after such a change:
//   RILL_WRITE_WIRE_CORPUS=1 build/tests/actors/wire_test --gtest_filter='WireCorpus*'
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "actors/distributed/wire.h"

namespace rill {
// Named after the file, not anonymous: the sanitizer builds compile test files
// together (unity builds), where helpers of the same name would collide.
namespace wire_corpus_test {

using proto::WireMessage;

Tensor Ramp(DataType dtype, const Shape& shape) {
  Tensor tensor(dtype, shape);
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    VisitDataType(dtype, [&]<class T>() { tensor.mutable_data<T>()[i] = static_cast<T>(i + 1); });
  }
  return tensor;
}

// File name -> the message it holds.
std::map<std::string, WireMessage> Seeds() {
  SelectedRows rows;
  rows.rows = {2, 0};
  rows.height = 4;
  rows.value = Ramp(DataType::kFloat32, {2, 3});
  const Tensor gradient = Ramp(DataType::kFloat32, {3, 100});
  const QuantizedValues int8 = Quantize(gradient.data<float>(), 300, GradientCompression::kInt8);
  const QuantizedValues int4 = Quantize(rows.value.data<float>(), 6, GradientCompression::kInt4, 4);
  return {
      {"hello", WireHello(1, 100)},
      {"hello_reply", WireHelloReply({40, 30})},
      {"resume", WireResume(1, 30)},
      {"resumed", WireResumed(30)},
      {"push_float32", WirePush("fc_0.w_0@GRAD", 3, Ramp(DataType::kFloat32, {3, 4}))},
      {"push_int64", WirePush("step@GRAD", 3, Ramp(DataType::kInt64, {5}))},
      {"push_rows", WirePushRows("emb@GRAD", 3, rows)},
      {"push_int8", WirePushCompressed("fc_0.w_0@GRAD", 3, {3, 100}, int8)},
      {"push_int4_rows", WirePushCompressed("emb@GRAD", 3, {2, 3}, int4, &rows)},
      {"pull", WirePull("fc_0.w_0")},
      {"value_float64", WireValue("fc_0.b_0.slice1", 4, Ramp(DataType::kFloat64, {}))},
      {"value_empty", WireValue("empty", 4, Ramp(DataType::kInt32, {0, 2}))},
      {"heartbeat", WireHeartbeat()},
      {"error", WireError("parameter server 0 (127.0.0.1:7164): no variable \"x\"")},
      {"bye", WireBye(1)},
      {"store_set", WireStoreSet("rank_1", std::string("tcp\0addr", 8))},
      {"store_get", WireStoreGet("rill/arrived/2")},
      {"store_value", WireStoreValue("rank_1", std::string("tcp\0addr", 8))},
  };
}

const std::filesystem::path kCorpus =
    std::filesystem::path(RILL_SOURCE_DIR) / "tests/fuzz/wire_corpus";

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

TEST(WireCorpusTest, EverySeedDecodesToWhatTheBuildersMake) {
  if (std::getenv("RILL_WRITE_WIRE_CORPUS") != nullptr) {
    std::filesystem::create_directories(kCorpus);
    for (const auto& [name, message] : Seeds()) {
      std::ofstream(kCorpus / name, std::ios::binary) << EncodeWire(message);
    }
  }
  std::set<int> kinds;
  for (const auto& [name, expected] : Seeds()) {
    SCOPED_TRACE(name);
    const std::filesystem::path path = kCorpus / name;
    ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing";
    const WireMessage decoded = DecodeWire(ReadFile(path), WireLimits{}, path.string());
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(decoded, expected))
        << "decoded " << decoded.ShortDebugString() << "\nexpected " << expected.ShortDebugString();
    kinds.insert(decoded.kind());
  }
  for (int kind = WireMessage::Kind_MIN + 1; kind <= WireMessage::Kind_MAX; ++kind) {
    // A bundle travels only in frames: its seed is in the frame fuzzer's corpus.
    if (kind == WireMessage::PUSH_BUNDLE) continue;
    EXPECT_TRUE(kinds.count(kind)) << "no seed of kind " << WireKindName(kind);
  }
}

}  // namespace wire_corpus_test
}  // namespace rill
