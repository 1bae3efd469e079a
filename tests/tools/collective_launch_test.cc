// Collective data parallelism as separate processes on loopback, driven
// through the `rill` command: `rill launch --nprocs N --collective` with 2 and
// 3 ranks (and 2 ranks of 2 places, --strategy reduce) ends with the parameters of one process
// trained on the same global batch (float32: 1e-5 relative) and the same parameters on every rank;
// a rank killed with SIGKILL or stopped with SIGSTOP mid-training makes the others exit within 10 s
// naming it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rill/checkpoint.h"
#include "rill/error.h"
#include "rill/tensor.h"
#include "tests/testing/cli_process.h"
#include "tests/testing/ports.h"
#include "tests/testing/training.h"

namespace rill {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using Process = testing::CliProcess;

// The parameter: ranks, places per rank.
class CollectiveLaunchTest : public ::testing::TestWithParam<std::pair<int, int>> {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) c = c == '/' ? '_' : c;
    dir_ = std::filesystem::path(::testing::TempDir()) / ("collective_launch_test_" + name);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    for (auto& p : processes_) p->Kill();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  Process& Start(const std::string& name, const std::vector<std::string>& args,
                 const std::map<std::string, std::string>& env = {}) {
    processes_.push_back(testing::StartCliProcess(RILL_CLI_PATH, Path(name + ".log"), args, env));
    return *processes_.back();
  }

  std::filesystem::path dir_;
  std::vector<std::unique_ptr<Process>> processes_;
};

// The parameters (fc_N.w, fc_N.b) of a checkpoint.
std::map<std::string, Tensor> Parameters(const std::string& path) {
  std::map<std::string, Tensor> params;
  const proto::TensorSet set = ReadTensorSet(path);
  for (const auto& t : set.tensors()) {
    int layer = 0, used = 0;
    char kind = 0;
    if (std::sscanf(t.name().c_str(), "fc_%d.%c%n", &layer, &kind, &used) == 2 &&
        static_cast<size_t>(used) == t.name().size()) {
      params[t.name()] = TensorFromProto(t, path);
    }
  }
  return params;
}

TEST_P(CollectiveLaunchTest, RanksMatchOneProcessOnTheGlobalBatch) {
  const auto [ranks, places] = GetParam();
  constexpr int kBatch = 16;
  const std::vector<std::string> train = {
      "--model", "mlp", "--epochs", "1", "--max-steps", "20", "--seed", "3", "--blas-threads", "1"};
  std::vector<std::string> single = {
      "train",  "--input",          "preloaded", "--batch", std::to_string(kBatch * ranks),
      "--save", Path("single.ckpt")};
  single.insert(single.end(), train.begin(), train.end());
  Process& alone = Start("single", single);
  ASSERT_TRUE(alone.Wait(300s)) << alone.Output();
  ASSERT_EQ(alone.status, 0) << alone.Output();

  std::vector<std::string> args = {"launch",
                                   "--nprocs",
                                   std::to_string(ranks),
                                   "--collective",
                                   "--seed",
                                   "3",
                                   "--",
                                   "--batch",
                                   std::to_string(kBatch),
                                   "--save",
                                   Path("collective.ckpt"),
                                   "--json"};
  // The model and the seed come from launch's own flags.
  args.insert(args.end(), {"--epochs", "1", "--max-steps", "20", "--blas-threads", "1"});
  if (places > 1) {
    args.insert(args.end(),
                {"--places", StrCat("cpu:", places), "--threads", "1", "--strategy", "reduce"});
  }
  Process& launch = Start("launch", args);
  ASSERT_TRUE(launch.Wait(300s)) << launch.Output();
  ASSERT_EQ(launch.status, 0) << launch.Output();

  // Every rank reports the same parameters.
  std::set<std::string> digests;
  int reported = 0;
  std::istringstream lines(launch.Output());
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("\"parameters_digest\":\"");
    if (line.rfind("[rank ", 0) != 0 || at == std::string::npos) continue;
    ++reported;
    digests.insert(line.substr(at + 21, 16));
  }
  EXPECT_EQ(reported, ranks) << launch.Output();
  EXPECT_EQ(digests.size(), 1u) << launch.Output();

  const auto expected = Parameters(Path("single.ckpt"));
  const auto got = Parameters(Path("collective.ckpt"));
  ASSERT_FALSE(expected.empty());
  ASSERT_EQ(got.size(), expected.size());
  for (const auto& [name, value] : expected) {
    EXPECT_LE(testing::RelativeDifference(got.at(name), value), 1e-5) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollectiveLaunchTest,
                         ::testing::Values(std::pair(2, 1), std::pair(3, 1), std::pair(2, 2)),
                         [](const auto& info) {
                           return StrCat(info.param.first, "Ranks", info.param.second, "Places");
                         });

class LostRankTest : public CollectiveLaunchTest {
 protected:
  // Three ranks train; mid-training rank 1 gets `signal`. Ranks 0 and 2 must
  // exit with status 1 within 10 s, saying `expected` (the collective timeout,
  // --connect-timeout-ms, is 30 s: only the news of the lost rank ends them).
  void LoseRankOneMidTraining(int signal, const std::string& expected) {
    const std::string master = "127.0.0.1:" + std::to_string(testing::ClosedLoopbackPort());
    std::vector<Process*> ranks;
    for (int r = 0; r < 3; ++r) {
      ranks.push_back(
          &Start("rank" + std::to_string(r),
                 {"train", "--collective", "--epochs", "1", "--batch", "16", "--blas-threads", "1"},
                 {{"RILL_RANK", std::to_string(r)},
                  {"RILL_WORLD_SIZE", "3"},
                  {"RILL_MASTER", master},
                  {"RILL_TOKEN", "the job's token"}}));
    }
    // Rank 0's store logs each rank that connects; then all train.
    ASSERT_TRUE(ranks[0]->WaitForOutput("rank 1 at", 120s)) << ranks[0]->Output();
    ASSERT_TRUE(ranks[0]->WaitForOutput("rank 2 at", 120s)) << ranks[0]->Output();
    std::this_thread::sleep_for(2s);  // mid-training
    kill(ranks[1]->pid, signal);
    const auto lost = Clock::now();
    for (int r : {0, 2}) {
      ASSERT_TRUE(ranks[r]->Wait(10s)) << "rank " << r << ":\n" << ranks[r]->Output();
      EXPECT_EQ(ranks[r]->status, 1) << ranks[r]->Output();
      EXPECT_NE(ranks[r]->Output().find(expected), std::string::npos) << ranks[r]->Output();
    }
    const auto took = Clock::now() - lost;
    std::printf("the other ranks exited %.2f s after the signal\n",
                std::chrono::duration<double>(took).count());
    EXPECT_LT(took, 10s);
  }
};

TEST_F(LostRankTest, AKilledRankStopsTheOthersWithin10sNamingIt) {
  LoseRankOneMidTraining(SIGKILL, "rank 1 left the group");
}

// A stopped rank's sockets stay open: only its silence on the rendezvous
// store (--peer-timeout-ms, 5 s) tells.
TEST_F(LostRankTest, AStoppedRankStopsTheOthersWithin10sNamingIt) {
  LoseRankOneMidTraining(SIGSTOP, "sent nothing for 5000 ms");
}

}  // namespace
}  // namespace rill
