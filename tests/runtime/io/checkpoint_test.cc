// Tests of checkpoints: persistable variables saved and restored bit-exactly,
// and the errors for missing variables or mismatched declarations; the file
// format's checks (damaged data, a damaged step, truncation, the old format,
// a newer version), each refused naming the file and the failed check; a
// failed write leaves the old file intact.
#include "rill/checkpoint.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "rill/program_io.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using ::rill::testing::MakeTensor;
using ::rill::testing::RandomTensor;

constexpr const char* kProgram = R"prog(
blocks {
  idx: 0 parent_idx: -1
  vars { name: "x" kind: DENSE_TENSOR dtype: FLOAT32 shape: [-1, 3] }
  vars { name: "w" kind: DENSE_TENSOR dtype: FLOAT64 shape: [3, 2] persistable: true parameter: true }
  vars { name: "steps" kind: DENSE_TENSOR dtype: INT64 shape: [1] persistable: true }
  vars { name: "table" kind: DENSE_TENSOR dtype: INT32 shape: [-1, 2] persistable: true }
}
blocks {
  idx: 1 parent_idx: 0
  vars { name: "moment" kind: DENSE_TENSOR dtype: FLOAT32 shape: [3, 2] persistable: true }
  vars { name: "tmp" kind: DENSE_TENSOR dtype: FLOAT32 shape: [3, 2] }
}
)prog";

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("checkpoint_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    program_ = ParseProgramText(kProgram);
    *scope_.Var("x")->mutable_tensor() = MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
    *scope_.Var("w")->mutable_tensor() = RandomTensor({3, 2}, 11);
    // Values whose bits matter: NaN payload, -0, denormal, infinity.
    Tensor w = scope_.GetTensor("w");
    w.mutable_data<double>()[0] = -0.0;
    w.mutable_data<double>()[1] = std::numeric_limits<double>::denorm_min();
    w.mutable_data<double>()[2] = -std::numeric_limits<double>::infinity();
    *scope_.Var("steps")->mutable_tensor() = MakeTensor<int64_t>({1}, {int64_t{1} << 50});
    *scope_.Var("table")->mutable_tensor() = MakeTensor<int32_t>({3, 2}, {1, -2, 3, -4, 5, -6});
    Tensor moment(DataType::kFloat32, {3, 2});
    uint32_t bits = 0x7fc12345;  // a NaN with a payload
    for (int i = 0; i < 6; ++i) std::memcpy(moment.mutable_data<float>() + i, &bits, 4), bits += 7;
    *scope_.Var("moment")->mutable_tensor() = moment;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  std::string ErrorMessage(const std::function<void()>& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return e.message();
    }
    ADD_FAILURE() << "no rill::Error thrown";
    return "";
  }

  std::filesystem::path dir_;
  proto::ProgramDesc program_;
  Scope scope_;
};

bool BitIdentical(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

TEST_F(CheckpointTest, PersistableNames) {
  EXPECT_EQ(PersistableVarNames(program_),
            (std::vector<std::string>{"w", "steps", "table", "moment"}));
}

TEST_F(CheckpointTest, SaveClobberLoadIsBitIdentical) {
  const std::string path = Path("ckpt.bin");
  std::map<std::string, Tensor> before;
  for (const auto& name : PersistableVarNames(program_))
    before[name] = scope_.GetTensor(name).Clone();
  SaveCheckpoint(program_, scope_, path);

  // Clobber every value: new shapes, new contents.
  for (const auto& name : PersistableVarNames(program_)) {
    Tensor* t = scope_.GetMutableTensor(name);
    t->Allocate(t->dtype(), {1, 1});
    t->Fill(99);
  }
  LoadCheckpoint(program_, &scope_, path);
  for (const auto& [name, tensor] : before) {
    EXPECT_TRUE(BitIdentical(scope_.GetTensor(name), tensor)) << name;
  }
}

TEST_F(CheckpointTest, OnlyPersistableVariablesAreSaved) {
  const std::string path = Path("ckpt.bin");
  SaveCheckpoint(program_, scope_, path);
  const proto::TensorSet set = ReadTensorSet(path);
  std::vector<std::string> names;
  for (const auto& t : set.tensors()) names.push_back(t.name());
  EXPECT_EQ(names, (std::vector<std::string>{"w", "steps", "table", "moment"}));
  EXPECT_EQ(set.tensors(1).dtype(), proto::INT64);
  EXPECT_EQ(set.tensors(1).data(), std::string("\0\0\0\0\0\0\x04\0", 8));  // 2^50, little-endian
}

TEST_F(CheckpointTest, LoadsIntoFreshScope) {
  const std::string path = Path("ckpt.bin");
  SaveCheckpoint(program_, scope_, path);
  Scope fresh;
  LoadCheckpoint(program_, &fresh, path);
  EXPECT_TRUE(BitIdentical(fresh.GetTensor("moment"), scope_.GetTensor("moment")));
  EXPECT_EQ(fresh.FindVar("x"), nullptr);
}

TEST_F(CheckpointTest, LoadsWithoutProgram) {
  const std::string path = Path("ckpt.bin");
  SaveCheckpoint(program_, scope_, path);
  Scope fresh;
  EXPECT_EQ(LoadCheckpoint(&fresh, path),
            (std::vector<std::string>{"w", "steps", "table", "moment"}));
  EXPECT_TRUE(BitIdentical(fresh.GetTensor("w"), scope_.GetTensor("w")));
}

TEST_F(CheckpointTest, ValuesInParentScopeAreFoundAndRestoredThere) {
  const std::string path = Path("ckpt.bin");
  SaveCheckpoint(program_, scope_, path);
  Scope& child = scope_.NewChild();
  const Tensor saved = scope_.GetTensor("steps").Clone();
  scope_.GetMutableTensor("steps")->Fill(0);
  LoadCheckpoint(program_, &child, path);
  EXPECT_EQ(child.FindLocalVar("steps"), nullptr);
  EXPECT_TRUE(BitIdentical(scope_.GetTensor("steps"), saved));
}

TEST_F(CheckpointTest, VariablesWithoutValueAreSkippedOnSave) {
  Scope partial;
  *partial.Var("w")->mutable_tensor() = scope_.GetTensor("w");
  partial.Var("steps");  // declared in the scope but never written
  const std::string path = Path("ckpt.bin");
  SaveCheckpoint(program_, partial, path);
  EXPECT_EQ(ReadTensorSet(path).tensors_size(), 1);
}

TEST_F(CheckpointTest, MissingVariableIsAnErrorNamingIt) {
  Scope partial;
  *partial.Var("w")->mutable_tensor() = scope_.GetTensor("w");
  const std::string path = Path("ckpt.bin");
  SaveCheckpoint(program_, partial, path);
  const std::string message = ErrorMessage([&] { LoadCheckpoint(program_, &scope_, path); });
  EXPECT_NE(message.find("no variable \"steps\""), std::string::npos) << message;
  EXPECT_NE(message.find(path), std::string::npos) << message;
}

TEST_F(CheckpointTest, ShapeMismatchIsAnErrorAndLeavesScopeUntouched) {
  const std::string path = Path("ckpt.bin");
  SaveCheckpoint(program_, scope_, path);
  proto::ProgramDesc changed = program_;
  changed.mutable_blocks(1)->mutable_vars(0)->set_shape(1, 5);  // moment: [3, 5]
  const Tensor w_before = scope_.GetTensor("w").Clone();
  scope_.GetMutableTensor("w")->Fill(1);
  const Tensor w_filled = scope_.GetTensor("w").Clone();
  const std::string message = ErrorMessage([&] { LoadCheckpoint(changed, &scope_, path); });
  EXPECT_NE(message.find(path + ": saved variable \"moment\""), std::string::npos) << message;
  EXPECT_NE(message.find("[3, 2]"), std::string::npos) << message;
  EXPECT_NE(message.find("[3, 5]"), std::string::npos) << message;
  // "w" comes before "moment" but was not restored: loading is all-or-nothing.
  EXPECT_TRUE(BitIdentical(scope_.GetTensor("w"), w_filled));
}

TEST_F(CheckpointTest, DtypeMismatchIsAnError) {
  const std::string path = Path("ckpt.bin");
  SaveCheckpoint(program_, scope_, path);
  proto::ProgramDesc changed = program_;
  changed.mutable_blocks(0)->mutable_vars(2)->set_dtype(proto::INT32);  // steps
  const std::string message = ErrorMessage([&] { LoadCheckpoint(changed, &scope_, path); });
  EXPECT_NE(message.find("\"steps\" is int64[1]"), std::string::npos) << message;
  EXPECT_NE(message.find("declares it int32[1]"), std::string::npos) << message;
}

TEST_F(CheckpointTest, SavingValueThatContradictsDeclarationIsAnError) {
  scope_.GetMutableTensor("w")->Allocate(DataType::kFloat64, {4, 4});
  const std::string path = Path("ckpt.bin");
  const std::string message = ErrorMessage([&] { SaveCheckpoint(program_, scope_, path); });
  EXPECT_NE(message.find("\"w\" has shape [4, 4]"), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(CheckpointTest, CorruptFileIsParseError) {
  const std::string path = Path("ckpt.bin");
  std::ofstream(path, std::ios::binary) << std::string("\x0a\xff\xff\xff\x0f", 5);
  try {
    LoadCheckpoint(program_, &scope_, path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_NE(e.message().find(path), std::string::npos) << e.message();
  }
}

TEST_F(CheckpointTest, TensorWithWrongByteCountIsParseError) {
  proto::TensorSet set;
  *set.add_tensors() = TensorToProto("w", scope_.GetTensor("w"));
  set.mutable_tensors(0)->mutable_data()->pop_back();
  const std::string path = Path("ckpt.bin");
  WriteCheckpointFile(path, set, kNoStep);
  Scope fresh;
  const std::string message = ErrorMessage([&] { LoadCheckpoint(&fresh, path); });
  EXPECT_NE(message.find("\"w\" is float64[3, 2] but holds 47 bytes"), std::string::npos)
      << message;
  EXPECT_EQ(fresh.FindVar("w"), nullptr);
}

TEST_F(CheckpointTest, DuplicateTensorIsParseError) {
  proto::TensorSet set;
  *set.add_tensors() = TensorToProto("w", scope_.GetTensor("w"));
  *set.add_tensors() = TensorToProto("w", scope_.GetTensor("w"));
  const std::string path = Path("ckpt.bin");
  WriteCheckpointFile(path, set, kNoStep);
  Scope fresh;
  const std::string message = ErrorMessage([&] { LoadCheckpoint(&fresh, path); });
  EXPECT_NE(message.find("\"w\" is saved twice"), std::string::npos) << message;
}

TEST_F(CheckpointTest, TensorProtoRejectsNegativeAndHugeShapes) {
  proto::TensorProto t;
  t.set_name("t");
  t.set_dtype(proto::FLOAT32);
  t.add_shape(-3);
  EXPECT_NE(ErrorMessage([&] { TensorFromProto(t); }).find("negative"), std::string::npos);
  t.clear_shape();
  for (int i = 0; i < 3; ++i) t.add_shape(int64_t{1} << 30);
  EXPECT_NE(ErrorMessage([&] { TensorFromProto(t); }).find("too large"), std::string::npos);
  t.clear_shape();
  t.add_shape(int64_t{1} << 61);  // numel * 4 bytes overflows size_t arithmetic
  EXPECT_NE(ErrorMessage([&] { TensorFromProto(t); }).find("holds 0 bytes"), std::string::npos);
  t.set_dtype(proto::DT_INVALID);
  EXPECT_NE(ErrorMessage([&] { TensorFromProto(t); }).find("invalid data type"), std::string::npos);
}

TEST_F(CheckpointTest, MissingFileIsIoError) {
  const std::string path = Path("nothing.bin");
  try {
    LoadCheckpoint(program_, &scope_, path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(e.message().find(path), std::string::npos) << e.message();
  }
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The message of the error that loading `path` into `program` throws.
std::string LoadError(const proto::ProgramDesc& program, const std::string& path) {
  Scope fresh;
  try {
    LoadCheckpoint(program, &fresh, path);
  } catch (const Error& e) {
    EXPECT_EQ(fresh.FindVar("w"), nullptr) << "a refused file restored a variable";
    return e.message();
  }
  ADD_FAILURE() << path << " loaded";
  return "";
}

TEST_F(CheckpointTest, TheStepRoundTrips) {
  const std::string path = Path("ckpt.bin");
  SaveCheckpoint(program_, scope_, path, 40);
  Scope fresh;
  EXPECT_EQ(LoadCheckpoint(program_, &fresh, path), 40);
  EXPECT_EQ(ReadCheckpointFile(path).step, 40);
  SaveCheckpoint(program_, scope_, path);
  EXPECT_EQ(LoadCheckpoint(program_, &fresh, path), kNoStep);
}

// Every byte of the file is covered: a flipped byte anywhere in the tensors'
// bytes (values, names, shapes) is refused.
TEST_F(CheckpointTest, AFlippedByteInTheDataIsRefusedByTheChecksum) {
  const std::string path = Path("ckpt.bin");
  SaveCheckpoint(program_, scope_, path, 20);
  const std::string good = ReadBytes(path);
  // The last bytes before the checksum are "moment"'s float values.
  for (size_t at : {size_t{28}, good.size() / 2, good.size() - 5}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x01);
    WriteBytes(path, bad);
    const std::string message = LoadError(program_, path);
    EXPECT_EQ(message.rfind(path + ": checksum mismatch", 0), 0u)
        << "byte " << at << ": " << message;
    EXPECT_NE(message.find("damaged"), std::string::npos) << message;
  }
}

// A NaN written over a value by damage (not saved by training) is refused too.
TEST_F(CheckpointTest, ANaNWrittenOverAValueIsRefused) {
  const std::string path = Path("ckpt.bin");
  SaveCheckpoint(program_, scope_, path, 20);
  std::string bad = ReadBytes(path);
  const uint32_t nan = 0x7fc00000;
  std::memcpy(&bad[bad.size() - 8], &nan, 4);
  WriteBytes(path, bad);
  EXPECT_NE(LoadError(program_, path).find("checksum mismatch"), std::string::npos);
}

TEST_F(CheckpointTest, AFlippedBitInTheStepIsRefused) {
  const std::string path = Path("ckpt.bin");
  SaveCheckpoint(program_, scope_, path, 20);
  std::string bad = ReadBytes(path);
  bad[13] = static_cast<char>(bad[13] ^ 0x01);  // step 20 -> 276 (offset 12, little-endian)
  WriteBytes(path, bad);
  try {
    ReadCheckpointFile(path);
    FAIL() << "a damaged step was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kParse);
    EXPECT_EQ(e.message().rfind(path + ": checksum mismatch", 0), 0u) << e.message();
  }
}

TEST_F(CheckpointTest, ATruncatedFileIsRefusedSayingSo) {
  const std::string path = Path("ckpt.bin");
  SaveCheckpoint(program_, scope_, path, 20);
  const std::string good = ReadBytes(path);
  for (size_t keep : {size_t{10}, size_t{30}, good.size() / 2, good.size() - 1}) {
    WriteBytes(path, good.substr(0, keep));
    const std::string message = LoadError(program_, path);
    EXPECT_EQ(message.rfind(path + ": truncated", 0), 0u) << keep << " bytes: " << message;
  }
  WriteBytes(path, "");
  EXPECT_NE(LoadError(program_, path).find(path + ": empty file"), std::string::npos);
  WriteBytes(path, good + "x");
  EXPECT_NE(LoadError(program_, path).find("the file holds"), std::string::npos);
}

TEST_F(CheckpointTest, TheOldUnversionedFormatIsRefusedSayingTheFormatChanged) {
  const std::string path = Path("old.bin");
  proto::TensorSet set;
  for (const auto& name : PersistableVarNames(program_)) {
    *set.add_tensors() = TensorToProto(name, scope_.GetTensor(name));
  }
  WriteBytes(path, set.SerializeAsString());  // what SaveCheckpoint wrote before version 1
  const std::string message = LoadError(program_, path);
  EXPECT_EQ(message.rfind(path + ": a checkpoint in the old, unversioned format", 0), 0u)
      << message;
  EXPECT_NE(message.find("format changed"), std::string::npos) << message;
}

TEST_F(CheckpointTest, ANewerFormatVersionIsRefused) {
  const std::string path = Path("ckpt.bin");
  SaveCheckpoint(program_, scope_, path);
  std::string bad = ReadBytes(path);
  bad[8] = 2;
  WriteBytes(path, bad);
  const std::string message = LoadError(program_, path);
  EXPECT_EQ(message.rfind(path + ": checkpoint format version 2; this Rill reads version 1", 0), 0u)
      << message;
}

// The write fails midway (the file-size limit cuts it short, as a full disk
// would): the error names the file, the old checkpoint is intact and no
// temporary file is left.
TEST_F(CheckpointTest, AWriteThatFailsMidwayLeavesTheOldFileIntact) {
  const std::string path = Path("ckpt.bin");
  SaveCheckpoint(program_, scope_, path, 20);
  const std::string old = ReadBytes(path);
  Tensor table(DataType::kInt32, {4096, 2});  // 32 KiB: over the limit below
  table.Fill(7);
  *scope_.Var("table")->mutable_tensor() = table;

  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 8192;
  auto* previous = signal(SIGXFSZ, SIG_IGN);  // the write returns EFBIG instead of a signal
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  try {
    SaveCheckpoint(program_, scope_, path, 40);
  } catch (const Error& e) {
    message = e.message();
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, previous);

  EXPECT_EQ(message.rfind(path + ": write failed", 0), 0u) << message;
  EXPECT_EQ(ReadBytes(path), old);
  EXPECT_EQ(ReadCheckpointFile(path).step, 20);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "ckpt.bin");
  }
  EXPECT_EQ(files, 1);
}

}  // namespace
}  // namespace rill
