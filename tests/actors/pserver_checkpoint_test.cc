// Tests of a parameter server's two checkpoints (actors/distributed/
// pserver_checkpoint.h): saving moves the newest aside as the previous, the
// steps offered count the startup values as a checkpoint while there are
// fewer than two, resuming from the previous drops the newest, a server
// killed between the two renames of a save still offers its previous, and a
// damaged or inconsistent pair is refused naming the file.
#include "actors/distributed/pserver_checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "rill/checkpoint.h"
#include "rill/error.h"
#include "rill/program_io.h"
#include "rill/scope.h"

namespace rill {
namespace {

// One persistable variable; the startup program sets it to 1.
constexpr const char* kMain = R"prog(
blocks {
  idx: 0 parent_idx: -1
  vars { name: "w" kind: DENSE_TENSOR dtype: FLOAT32 shape: [2] persistable: true }
}
)prog";
constexpr const char* kStartup = R"prog(
blocks {
  idx: 0 parent_idx: -1
  vars { name: "w" kind: DENSE_TENSOR dtype: FLOAT32 shape: [2] persistable: true }
  ops { type: "fill_constant" outputs { name: "Out" vars: "w" }
        attrs { name: "shape" ints { values: [2] } } attrs { name: "dtype" s: "float32" }
        attrs { name: "value" f: 1 } }
}
)prog";

class PserverCheckpointsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("pserver_checkpoint_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "ps.ckpt").string();
    main_ = ParseProgramText(kMain);
    startup_ = ParseProgramText(kStartup);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A server starting: the startup values, then its checkpoints.
  std::unique_ptr<PserverCheckpoints> Open(Scope* scope) {
    *scope->Var("w")->mutable_tensor() = Tensor(DataType::kFloat32, {2});
    scope->GetMutableTensor("w")->Fill(1);
    return std::make_unique<PserverCheckpoints>(main_, startup_, path_, scope);
  }
  // Saves w = `value` as the checkpoint of `step`.
  static void SaveValue(PserverCheckpoints& files, Scope* scope, float value, int64_t step) {
    scope->GetMutableTensor("w")->Fill(value);
    files.Save(*scope, step);
  }
  static float W(const Scope& scope) { return scope.GetTensor("w").data<float>()[0]; }
  std::string Error(Scope* scope) {
    try {
      Open(scope);
    } catch (const rill::Error& e) {
      return e.message();
    }
    ADD_FAILURE() << "the checkpoints were accepted";
    return "";
  }

  std::filesystem::path dir_;
  std::string path_;
  proto::ProgramDesc main_, startup_;
};

TEST_F(PserverCheckpointsTest, KeepsTheLastTwoAndOffersTheirSteps) {
  Scope scope;
  auto files = Open(&scope);
  EXPECT_EQ(files->steps(), (std::vector<int64_t>{0}));
  SaveValue(*files, &scope, 2, 2);
  EXPECT_EQ(files->steps(), (std::vector<int64_t>{2, 0}));
  SaveValue(*files, &scope, 4, 4);
  SaveValue(*files, &scope, 6, 6);
  EXPECT_EQ(files->steps(), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(ReadCheckpointFile(path_).step, 6);
  EXPECT_EQ(ReadCheckpointFile(path_ + ".prev").step, 4);

  Scope restarted;
  auto again = Open(&restarted);
  EXPECT_EQ(again->steps(), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(W(restarted), 6);  // the newest is loaded at start
  EXPECT_EQ(again->Describe(4), path_ + ".prev");
}

TEST_F(PserverCheckpointsTest, ResumingFromThePreviousDropsTheNewest) {
  Scope scope;
  auto files = Open(&scope);
  SaveValue(*files, &scope, 4, 4);
  SaveValue(*files, &scope, 6, 6);
  Scope restarted;
  auto again = Open(&restarted);
  again->Resume(4, &restarted);
  EXPECT_EQ(W(restarted), 4);
  EXPECT_EQ(again->steps(), (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(ReadCheckpointFile(path_).step, 4);
  EXPECT_FALSE(std::filesystem::exists(path_ + ".prev"));
  SaveValue(*again, &restarted, 6, 6);
  EXPECT_EQ(again->steps(), (std::vector<int64_t>{6, 4}));
}

TEST_F(PserverCheckpointsTest, ResumingFromZeroRunsTheStartupProgramAgain) {
  Scope scope;
  auto files = Open(&scope);
  SaveValue(*files, &scope, 2, 2);
  Scope restarted;
  auto again = Open(&restarted);
  EXPECT_EQ(W(restarted), 2);
  again->Resume(0, &restarted);
  EXPECT_EQ(W(restarted), 1);
  EXPECT_EQ(again->steps(), (std::vector<int64_t>{0}));
  EXPECT_FALSE(std::filesystem::exists(path_));
}

// Killed after the newest was moved aside and before the next took its place:
// the previous is offered (and loaded), the unfinished next is removed.
TEST_F(PserverCheckpointsTest, AServerKilledMidSaveOffersItsPrevious) {
  Scope scope;
  auto files = Open(&scope);
  SaveValue(*files, &scope, 4, 4);
  SaveValue(*files, &scope, 6, 6);
  std::filesystem::rename(path_, path_ + ".prev");
  std::ofstream(path_ + ".next") << "half a checkpoint";
  Scope restarted;
  auto again = Open(&restarted);
  EXPECT_EQ(again->steps(), (std::vector<int64_t>{6, 0}));
  EXPECT_EQ(W(restarted), 6);
  EXPECT_FALSE(std::filesystem::exists(path_ + ".next"));
  again->Resume(6, &restarted);
  EXPECT_EQ(ReadCheckpointFile(path_).step, 6);
}

TEST_F(PserverCheckpointsTest, ADamagedOrInconsistentPairIsRefusedNamingTheFile) {
  Scope scope;
  auto files = Open(&scope);
  SaveValue(*files, &scope, 4, 4);
  SaveValue(*files, &scope, 6, 6);
  const std::filesystem::path prev = path_ + ".prev";
  std::string bytes;
  {
    std::ifstream in(prev, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string damaged = bytes;
  damaged[damaged.size() - 6] ^= 0x10;
  std::ofstream(prev, std::ios::binary | std::ios::trunc) << damaged;
  Scope a;
  EXPECT_EQ(Error(&a).rfind(prev.string() + ": checksum mismatch", 0), 0u);

  // The previous newer than the newest: not one server's pair.
  std::filesystem::copy_file(path_, prev, std::filesystem::copy_options::overwrite_existing);
  Scope b;
  const std::string message = Error(&b);
  EXPECT_EQ(message.rfind(prev.string() + ": the previous checkpoint is at step 6", 0), 0u)
      << message;
}

}  // namespace
}  // namespace rill
