// Tests of program files: text and binary parsing, located parse errors,
// loading by extension, saving, and the readable listing.
#include "rill/program_io.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "rill/error.h"

namespace rill {
namespace {

constexpr const char* kProgramText = R"prog(
blocks {
  idx: 0
  parent_idx: -1
  vars { name: "x" kind: DENSE_TENSOR dtype: FLOAT32 shape: [-1, 4] stop_gradient: true }
  vars { name: "w" kind: DENSE_TENSOR dtype: FLOAT32 shape: [4, 2] persistable: true parameter: true }
  vars { name: "h" kind: DENSE_TENSOR dtype: FLOAT32 shape: [-1, 2] }
  ops {
    type: "mul"
    inputs { name: "X" vars: "x" }
    inputs { name: "Y" vars: "w" }
    outputs { name: "Out" vars: "h" }
    attrs { name: "x_num_col_dims" i: 1 }
  }
  ops {
    type: "scale"
    inputs { name: "X" vars: "h" }
    outputs { name: "Out" vars: "h" }
    attrs { name: "scale" f: 0.5 }
    attrs { name: "bias_after_scale" b: false }
    attrs { name: "note" s: "a \"quoted\" word" }
    attrs { name: "axes" ints { values: [0, 1] } }
    attrs { name: "sub" block: 1 }
  }
}
blocks { idx: 1 parent_idx: 0 }
random_seed: 7
)prog";

class ProgramIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("program_io_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string Write(const std::string& name, const std::string& contents) const {
    std::ofstream(Path(name), std::ios::binary) << contents;
    return Path(name);
  }
  std::filesystem::path dir_;
};

// The rill::Error `fn` throws; fails the test when it throws none.
template <class Fn>
Error ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no rill::Error thrown";
  return Error(ErrorCode::kInternal, "none");
}

TEST_F(ProgramIoTest, ParsesText) {
  const proto::ProgramDesc program = ParseProgramText(kProgramText);
  ASSERT_EQ(program.blocks_size(), 2);
  EXPECT_EQ(program.random_seed(), 7u);
  const auto& block = program.blocks(0);
  ASSERT_EQ(block.vars_size(), 3);
  EXPECT_EQ(block.vars(0).shape(0), -1);
  EXPECT_TRUE(block.vars(1).persistable());
  ASSERT_EQ(block.ops_size(), 2);
  EXPECT_EQ(block.ops(0).type(), "mul");
  EXPECT_EQ(block.ops(0).inputs(1).vars(0), "w");
  EXPECT_EQ(program.blocks(1).parent_idx(), 0);
}

TEST_F(ProgramIoTest, TextErrorHasLineAndColumn) {
  const std::string text = "blocks {\n  idx: 0\n  parnet_idx: -1\n}\n";
  const Error e = ErrorOf([&] { ParseProgramText(text); });
  EXPECT_EQ(e.code(), ErrorCode::kParse);
  EXPECT_EQ(e.message().rfind("3:13: ", 0), 0u) << e.message();
  EXPECT_NE(e.message().find("parnet_idx"), std::string::npos) << e.message();
}

TEST_F(ProgramIoTest, TextErrorNamesSource) {
  const Error e = ErrorOf([] { ParseProgramText("blocks { idx: \"zero\" }", "net.pbtxt"); });
  EXPECT_EQ(e.code(), ErrorCode::kParse);
  EXPECT_EQ(e.message().rfind("net.pbtxt: 1:15: ", 0), 0u) << e.message();
}

TEST_F(ProgramIoTest, TextErrorOnBadEnum) {
  const Error e = ErrorOf([] { ParseProgramText("blocks {\n vars { dtype: FLOAT16 }\n}"); });
  EXPECT_EQ(e.message().rfind("2:", 0), 0u) << e.message();
  EXPECT_NE(e.message().find("FLOAT16"), std::string::npos) << e.message();
}

TEST_F(ProgramIoTest, BinaryRoundTrip) {
  const proto::ProgramDesc program = ParseProgramText(kProgramText);
  const proto::ProgramDesc again = ParseProgramBinary(program.SerializeAsString());
  EXPECT_EQ(again.SerializeAsString(), program.SerializeAsString());
}

TEST_F(ProgramIoTest, BadBinaryIsParseError) {
  const Error e = ErrorOf([] { ParseProgramBinary(std::string("\x0a\xff\xff\xff", 4), "p.pb"); });
  EXPECT_EQ(e.code(), ErrorCode::kParse);
  EXPECT_EQ(e.message().rfind("p.pb: ", 0), 0u) << e.message();
}

TEST_F(ProgramIoTest, TextRoundTripThroughProgramToText) {
  const proto::ProgramDesc program = ParseProgramText(kProgramText);
  EXPECT_EQ(ParseProgramText(ProgramToText(program)).SerializeAsString(),
            program.SerializeAsString());
}

TEST_F(ProgramIoTest, LoadsByExtension) {
  const proto::ProgramDesc program = ParseProgramText(kProgramText);
  const std::string expected = program.SerializeAsString();
  for (const char* name : {"a.pbtxt", "a.txt", "a.prototxt", "A.PBTXT"}) {
    EXPECT_EQ(LoadProgram(Write(name, kProgramText)).SerializeAsString(), expected) << name;
  }
  for (const char* name : {"a.pb", "a.bin"}) {
    EXPECT_EQ(LoadProgram(Write(name, expected)).SerializeAsString(), expected) << name;
  }
}

TEST_F(ProgramIoTest, UnknownExtensionTriesBinaryThenText) {
  const proto::ProgramDesc program = ParseProgramText(kProgramText);
  const std::string expected = program.SerializeAsString();
  EXPECT_EQ(LoadProgram(Write("binary.prog", expected)).SerializeAsString(), expected);
  EXPECT_EQ(LoadProgram(Write("text.prog", kProgramText)).SerializeAsString(), expected);
  EXPECT_EQ(LoadProgram(Write("noext", kProgramText)).SerializeAsString(), expected);
}

TEST_F(ProgramIoTest, LoadErrorNamesFileLineAndColumn) {
  const std::string path = Write("bad.pbtxt", "blocks {\n  idx: 0\n  ops { type: mul }\n}\n");
  const Error e = ErrorOf([&] { LoadProgram(path); });
  EXPECT_EQ(e.code(), ErrorCode::kParse);
  EXPECT_EQ(e.message().rfind(path + ": 3:15: ", 0), 0u) << e.message();
}

TEST_F(ProgramIoTest, LoadErrorWithUnknownExtensionReportsTextError) {
  const std::string path = Write("bad.prog", "blocks {\n  idx: zero\n}\n");
  const Error e = ErrorOf([&] { LoadProgram(path); });
  EXPECT_EQ(e.code(), ErrorCode::kParse);
  EXPECT_EQ(e.message().rfind(path + ": 2:8: ", 0), 0u) << e.message();
  EXPECT_NE(e.message().find("not a binary program either"), std::string::npos) << e.message();
}

TEST_F(ProgramIoTest, BinaryFileWithTextExtensionFailsAsText) {
  const std::string bytes = ParseProgramText(kProgramText).SerializeAsString();
  EXPECT_THROW(LoadProgram(Write("wrong.pbtxt", bytes)), Error);
}

TEST_F(ProgramIoTest, MissingFileIsIoErrorNamingPath) {
  const std::string path = Path("missing.pbtxt");
  const Error e = ErrorOf([&] { LoadProgram(path); });
  EXPECT_EQ(e.code(), ErrorCode::kIo);
  EXPECT_NE(e.message().find(path), std::string::npos) << e.message();
}

TEST_F(ProgramIoTest, DirectoryIsIoError) {
  const Error e = ErrorOf([&] { LoadProgram(dir_.string()); });
  EXPECT_EQ(e.code(), ErrorCode::kIo);
  EXPECT_NE(e.message().find("directory"), std::string::npos) << e.message();
}

TEST_F(ProgramIoTest, SaveTextAndBinary) {
  const proto::ProgramDesc program = ParseProgramText(kProgramText);
  SaveProgram(program, Path("out.pbtxt"));
  SaveProgram(program, Path("out.pb"));
  const std::string text = ReadFileToString(Path("out.pbtxt"));
  EXPECT_NE(text.find("blocks {"), std::string::npos) << text;
  EXPECT_EQ(ReadFileToString(Path("out.pb")), program.SerializeAsString());
  EXPECT_EQ(LoadProgram(Path("out.pbtxt")).SerializeAsString(), program.SerializeAsString());
  EXPECT_EQ(LoadProgram(Path("out.pb")).SerializeAsString(), program.SerializeAsString());
}

TEST_F(ProgramIoTest, AtomicWriteReplacesAndLeavesNoTemporaries) {
  const std::string path = Path("file.bin");
  WriteFileAtomically(path, "first version, longer");
  WriteFileAtomically(path, "second");
  EXPECT_EQ(ReadFileToString(path), "second");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "file.bin");
  }
  EXPECT_EQ(files, 1);
}

TEST_F(ProgramIoTest, AtomicWriteIntoMissingDirectoryIsIoError) {
  const std::string path = Path("nope/file.bin");
  const Error e = ErrorOf([&] { WriteFileAtomically(path, "x"); });
  EXPECT_EQ(e.code(), ErrorCode::kIo);
  EXPECT_NE(e.message().find(path), std::string::npos) << e.message();
}

// A path that cannot be written is found before anything long runs, with the
// path and the system's reason; a writable one leaves nothing behind.
TEST_F(ProgramIoTest, CheckWritableNamesThePathAndTheCause) {
  CheckWritable(Path("fine.bin"));
  EXPECT_TRUE(std::filesystem::is_empty(dir_));

  const std::string missing = Path("no_such_dir/ckpt.bin");
  Error e = ErrorOf([&] { CheckWritable(missing); });
  EXPECT_EQ(e.code(), ErrorCode::kIo);
  EXPECT_NE(e.message().find(missing), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("No such file or directory"), std::string::npos) << e.message();

  std::ofstream(Path("a_file")) << "x";
  const std::string under_file = Path("a_file/ckpt.bin");
  e = ErrorOf([&] { CheckWritable(under_file); });
  EXPECT_NE(e.message().find(under_file), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("Not a directory"), std::string::npos) << e.message();

  e = ErrorOf([&] { CheckWritable(dir_.string()); });
  EXPECT_NE(e.message().find("is a directory"), std::string::npos) << e.message();
}

TEST_F(ProgramIoTest, FormatProgramListsBlocksVarsAndOps) {
  const std::string expected =
      "random_seed 7\n"
      "block 0 (parent -1)\n"
      "  var x: float32[-1, 4]  (stop_gradient)\n"
      "  var w: float32[4, 2]  (persistable, parameter)\n"
      "  var h: float32[-1, 2]\n"
      "  0: mul(X=[x], Y=[w]) -> (Out=[h])  {x_num_col_dims=1}\n"
      "  1: scale(X=[h]) -> (Out=[h])  {scale=0.5, bias_after_scale=false, "
      "note=\"a \\\"quoted\\\" word\", axes=[0, 1], sub=block 1}\n"
      "\n"
      "block 1 (parent 0)\n";
  EXPECT_EQ(FormatProgram(ParseProgramText(kProgramText)), expected);
}

TEST_F(ProgramIoTest, FormatProgramShowsInvalidValuesWithoutThrowing) {
  proto::ProgramDesc program;
  auto* block = program.add_blocks();
  block->set_parent_idx(-1);
  auto* var = block->add_vars();
  var->set_name("v");
  var->set_dtype(static_cast<proto::DataType>(42));
  auto* op = block->add_ops();
  op->set_type("");
  op->add_attrs()->set_name("empty");
  op->add_attrs()->set_name("fs");
  op->mutable_attrs(1)->mutable_floats()->add_values(0.1f);
  op->mutable_attrs(1)->mutable_floats()->add_values(-2.0f);
  std::string text;
  ASSERT_NO_THROW(text = FormatProgram(program));
  EXPECT_NE(text.find("var v: <invalid dtype 42>[]  (kind 0)"), std::string::npos) << text;
  EXPECT_NE(text.find("0: () -> ()  {empty=<unset>, fs=[0.1, -2]}"), std::string::npos) << text;
}

}  // namespace
}  // namespace rill
