// Tests of .npy reading and writing: round trips of every dtype, files written
// by NumPy, and the errors for malformed or unsupported files.
#include "rill/npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "rill/program_io.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using ::rill::testing::MakeTensor;
using ::rill::testing::ToDoubles;

// Complete .npy files written by NumPy 1.24 (np.save into a BytesIO, printed as hex).
// np.array([[1.5, -2.25, 3], [0.125, 1e-3, -7]], np.float32)
constexpr const char* kNumpyFloat32 =
    "934e554d5059010076007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a20"
    "46616c73652c20277368617065273a2028322c2033292c207d20202020202020202020202020202020202020"
    "2020202020202020202020202020202020202020202020202020202020202020202020202020200a0000c03f"
    "000010c0000040400000003e6f12833a0000e0c0";
// np.array([1, -2, 3, 1 << 40], np.int64)
constexpr const char* kNumpyInt64 =
    "934e554d5059010076007b276465736372273a20273c6938272c2027666f727472616e5f6f72646572273a20"
    "46616c73652c20277368617065273a2028342c292c207d202020202020202020202020202020202020202020"
    "2020202020202020202020202020202020202020202020202020202020202020202020202020200a01000000"
    "00000000feffffffffffffff03000000000000000000000000010000";
// np.array([[0.1], [-1e300]]), version=(2, 0)
constexpr const char* kNumpyFloat64V2 =
    "934e554d50590200740000007b276465736372273a20273c6638272c2027666f727472616e5f6f7264657227"
    "3a2046616c73652c20277368617065273a2028322c2031292c207d2020202020202020202020202020202020"
    "2020202020202020202020202020202020202020202020202020202020202020202020202020200a9a999999"
    "9999b93f9c7500883ce437fe";
// np.asfortranarray(np.ones((2, 2), np.float32))
constexpr const char* kNumpyFortran =
    "934e554d5059010076007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a20"
    "547275652c20277368617065273a2028322c2032292c207d2020202020202020202020202020202020202020"
    "2020202020202020202020202020202020202020202020202020202020202020202020202020200a0000803f"
    "0000803f0000803f0000803f";
// np.array([1, 2], '>i4')
constexpr const char* kNumpyBigEndian =
    "934e554d5059010076007b276465736372273a20273e6934272c2027666f727472616e5f6f72646572273a20"
    "46616c73652c20277368617065273a2028322c292c207d202020202020202020202020202020202020202020"
    "2020202020202020202020202020202020202020202020202020202020202020202020202020200a00000001"
    "00000002";
// np.array([1, 2], np.uint8)
constexpr const char* kNumpyUint8 =
    "934e554d5059010076007b276465736372273a20277c7531272c2027666f727472616e5f6f72646572273a20"
    "46616c73652c20277368617065273a2028322c292c207d202020202020202020202020202020202020202020"
    "2020202020202020202020202020202020202020202020202020202020202020202020202020200a0102";

std::string FromHex(const char* hex) {
  std::string out;
  for (size_t i = 0; hex[i] != '\0' && hex[i + 1] != '\0'; i += 2) {
    out += static_cast<char>(std::stoi(std::string(hex + i, 2), nullptr, 16));
  }
  return out;
}

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("npy_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string WriteBytes(const std::string& name, const std::string& bytes) const {
    std::ofstream(Path(name), std::ios::binary) << bytes;
    return Path(name);
  }
  // The message of the rill::Error that reading `bytes` from a file throws.
  std::string ReadError(const std::string& bytes) const {
    const std::string path = WriteBytes("bad.npy", bytes);
    try {
      ReadNpy(path);
    } catch (const Error& e) {
      EXPECT_NE(e.message().find(path), std::string::npos) << e.message();
      return e.message();
    }
    ADD_FAILURE() << "no error reading " << ::testing::PrintToString(bytes);
    return "";
  }

  std::filesystem::path dir_;
};

template <class T>
void ExpectRoundTrip(const std::string& path, const Shape& shape, const std::vector<T>& values) {
  const Tensor original = MakeTensor<T>(shape, values);
  WriteNpy(path, original);
  const Tensor loaded = ReadNpy(path);
  EXPECT_EQ(loaded.dtype(), DataTypeOf<T>());
  EXPECT_EQ(loaded.shape(), shape);
  ASSERT_EQ(loaded.numel(), original.numel());
  EXPECT_EQ(std::memcmp(loaded.raw_data(), original.raw_data(), original.bytes()), 0);
}

TEST_F(NpyTest, RoundTripFloat32) {
  ExpectRoundTrip<float>(Path("a.npy"), {2, 3}, {1.5f, -0.0f, 3e-38f, 1e30f, -7.25f, 0.1f});
}

TEST_F(NpyTest, RoundTripFloat64) {
  ExpectRoundTrip<double>(Path("a.npy"), {3}, {0.1, -1e300, 4.9e-324});
}

TEST_F(NpyTest, RoundTripInt32) {
  ExpectRoundTrip<int32_t>(Path("a.npy"), {2, 1, 2}, {0, -1, 2147483647, -2147483647 - 1});
}

TEST_F(NpyTest, RoundTripInt64) {
  ExpectRoundTrip<int64_t>(Path("a.npy"), {4, 1}, {1, -2, int64_t{1} << 62, -(int64_t{1} << 40)});
}

TEST_F(NpyTest, RoundTripScalarAndEmpty) {
  ExpectRoundTrip<float>(Path("scalar.npy"), {}, {42.0f});
  ExpectRoundTrip<int64_t>(Path("empty.npy"), {0, 5}, {});
}

TEST_F(NpyTest, WrittenHeaderIsNumpyStyleAndAligned) {
  const std::string bytes = SerializeNpy(MakeTensor<float>({4}, {1, 2, 3, 4}));
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_length =
      static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_length) % 64, 0u);
  EXPECT_EQ(bytes.size(), 10 + header_length + 16);
  const std::string header = bytes.substr(10, header_length);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 0), 0u)
      << header;
  EXPECT_EQ(header.back(), '\n');
}

TEST_F(NpyTest, HugeHeaderUsesVersion2) {
  // 25000 dimensions of size 1 need a header longer than version 1.0's 65535 bytes.
  const Tensor original = MakeTensor<int32_t>(Shape(25000, 1), {7});
  const std::string bytes = SerializeNpy(original);
  ASSERT_GT(bytes.size(), 12u);
  EXPECT_EQ(bytes[6], 2);
  EXPECT_EQ(bytes.size() % 64, 4u);  // 64-aligned header, then one int32
  const Tensor loaded = ParseNpy(bytes);
  EXPECT_EQ(loaded.shape(), original.shape());
  EXPECT_EQ(loaded.data<int32_t>()[0], 7);
}

TEST_F(NpyTest, ReadsNumpyFloat32) {
  const Tensor t = ReadNpy(WriteBytes("f32.npy", FromHex(kNumpyFloat32)));
  EXPECT_EQ(t.dtype(), DataType::kFloat32);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(ToDoubles(t),
            (std::vector<double>{1.5, -2.25, 3.0, 0.125, static_cast<double>(1e-3f), -7.0}));
}

TEST_F(NpyTest, ReadsNumpyInt64) {
  const Tensor t = ReadNpy(WriteBytes("i64.npy", FromHex(kNumpyInt64)));
  EXPECT_EQ(t.dtype(), DataType::kInt64);
  EXPECT_EQ(t.shape(), (Shape{4}));
  const int64_t* p = t.data<int64_t>();
  EXPECT_EQ(p[0], 1);
  EXPECT_EQ(p[1], -2);
  EXPECT_EQ(p[2], 3);
  EXPECT_EQ(p[3], int64_t{1} << 40);
}

TEST_F(NpyTest, ReadsNumpyVersion2Float64) {
  const Tensor t = ReadNpy(WriteBytes("f64.npy", FromHex(kNumpyFloat64V2)));
  EXPECT_EQ(t.dtype(), DataType::kFloat64);
  EXPECT_EQ(t.shape(), (Shape{2, 1}));
  EXPECT_EQ(t.data<double>()[0], 0.1);
  EXPECT_EQ(t.data<double>()[1], -1e300);
}

TEST_F(NpyTest, RewritingNumpyFileKeepsTheData) {
  const Tensor numpy = ParseNpy(FromHex(kNumpyFloat32));
  const Tensor again = ParseNpy(SerializeNpy(numpy));
  EXPECT_EQ(again.shape(), numpy.shape());
  EXPECT_EQ(std::memcmp(again.raw_data(), numpy.raw_data(), numpy.bytes()), 0);
}

TEST_F(NpyTest, FortranOrderIsAnError) {
  const std::string message = ReadError(FromHex(kNumpyFortran));
  EXPECT_NE(message.find("Fortran"), std::string::npos) << message;
}

TEST_F(NpyTest, BigEndianIsAnError) {
  const std::string message = ReadError(FromHex(kNumpyBigEndian));
  EXPECT_NE(message.find("big-endian"), std::string::npos) << message;
}

TEST_F(NpyTest, OtherDtypeIsAnError) {
  const std::string message = ReadError(FromHex(kNumpyUint8));
  EXPECT_NE(message.find("'|u1' is not supported"), std::string::npos) << message;
}

TEST_F(NpyTest, TruncatedDataIsAnError) {
  const std::string full = FromHex(kNumpyFloat32);
  const std::string message = ReadError(full.substr(0, full.size() - 3));
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  EXPECT_NE(message.find("float32[2, 3] (24 bytes)"), std::string::npos) << message;
}

TEST_F(NpyTest, TrailingBytesAreAnError) {
  const std::string message = ReadError(FromHex(kNumpyFloat32) + "xyz");
  EXPECT_NE(message.find("3 bytes longer"), std::string::npos) << message;
}

TEST_F(NpyTest, BadMagicIsAnError) {
  EXPECT_NE(ReadError("PK\x03\x04 not numpy at all").find("magic"), std::string::npos);
  EXPECT_NE(ReadError("").find("magic"), std::string::npos);
}

TEST_F(NpyTest, UnsupportedVersionIsAnError) {
  std::string bytes = FromHex(kNumpyFloat32);
  bytes[6] = 9;
  EXPECT_NE(ReadError(bytes).find("version 9.0"), std::string::npos);
}

TEST_F(NpyTest, HeaderLongerThanFileIsAnError) {
  std::string bytes = FromHex(kNumpyFloat32);
  bytes[8] = '\xff';
  bytes[9] = '\x7f';
  EXPECT_NE(ReadError(bytes).find("truncated .npy header"), std::string::npos);
}

// A v1 file whose header text is `header` (padding added) followed by `data`.
std::string NpyWithHeader(const std::string& header, const std::string& data = "") {
  std::string text = header + "\n";
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(text.size() & 0xff);
  out += static_cast<char>(text.size() >> 8);
  return out + text + data;
}

TEST_F(NpyTest, MalformedHeadersAreErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not a dict", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False}", "no 'shape'"},
      {"{'fortran_order': False, 'shape': (1,)}", "no 'descr'"},
      {"{'descr': '<f4', 'shape': (1,)}", "no 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}", "expected True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", "non-negative integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2}", "expected ',' or ')'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", "unexpected key"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "twice"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}", "expected ':'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk", "after the closing"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296)}",
       "too large"},
      {"{'descr': '<f4'", "expected ',' or '}'"},
  };
  for (const auto& [header, expected] : cases) {
    const std::string message = ReadError(NpyWithHeader(header, std::string(4, '\0')));
    EXPECT_NE(message.find(expected), std::string::npos)
        << "header " << header << " gave: " << message;
  }
}

TEST_F(NpyTest, HugeShapeWithLittleDataIsTruncatedNotAllocated) {
  const std::string message = ReadError(NpyWithHeader(
      "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, 1000000000), }", "abcdefgh"));
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
}

TEST_F(NpyTest, AcceptsHandWrittenHeaderVariants) {
  // Double quotes, no trailing comma, Python 2 long suffixes, keys in another order.
  std::string data(8, '\0');
  const Tensor t = ParseNpy(
      NpyWithHeader("{\"shape\": (2L,), \"fortran_order\": False, \"descr\": \"<i4\"}", data));
  EXPECT_EQ(t.dtype(), DataType::kInt32);
  EXPECT_EQ(t.shape(), (Shape{2}));
}

TEST_F(NpyTest, MissingFileIsIoErrorNamingPath) {
  const std::string path = Path("does_not_exist.npy");
  try {
    ReadNpy(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(e.message().find(path), std::string::npos) << e.message();
  }
}

TEST_F(NpyTest, WritingEmptyTensorIsAnError) {
  EXPECT_THROW(WriteNpy(Path("x.npy"), Tensor()), Error);
  EXPECT_FALSE(std::filesystem::exists(Path("x.npy")));
}

TEST_F(NpyTest, WritingIntoMissingDirectoryIsIoError) {
  try {
    WriteNpy(Path("no/such/dir/x.npy"), MakeTensor<float>({1}, {1}));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(e.message().find("no/such/dir/x.npy"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace rill
