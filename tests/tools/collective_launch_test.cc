// Collective data parallelism as separate processes on loopback, driven
// through the `rill` command: `rill launch --nprocs N --collective` with 2 and
// 3 ranks ends with the parameters of one process trained on the same global
// batch (float32: 1e-5 relative) and the same parameters on every rank; a
// rank killed with SIGKILL mid-training makes the others exit within 10 s
// naming it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
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
#include <vector>

#include "rill/checkpoint.h"
#include "rill/tensor.h"

namespace rill {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

// A `rill` process whose stdout and stderr go to a log file.
struct Process {
  pid_t pid = -1;
  std::string log;
  int status = -1;  // exit status, 128 + signal, or -1 while running

  std::string Output() const {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  bool Wait(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (status < 0) {
      int raw = 0;
      if (waitpid(pid, &raw, WNOHANG) == pid) {
        status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
        break;
      }
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }
  bool WaitForOutput(const std::string& text, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      if (Output().find(text) != std::string::npos) return true;
      if (Wait(0ms)) return Output().find(text) != std::string::npos;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  void Kill() {
    if (status < 0) {
      kill(pid, SIGKILL);
      Wait(10s);
    }
  }
};

class CollectiveLaunchTest : public ::testing::TestWithParam<int> {
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
    auto process = std::make_unique<Process>();
    process->log = Path(name + ".log");
    std::vector<std::string> argv = {RILL_CLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> raw;
    for (auto& arg : argv) raw.push_back(arg.data());
    raw.push_back(nullptr);
    process->pid = fork();
    if (process->pid == 0) {
      const int fd = open(process->log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      for (const auto& [key, value] : env) setenv(key.c_str(), value.c_str(), 1);
      execv(raw[0], raw.data());
      _exit(127);
    }
    processes_.push_back(std::move(process));
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

double RelativeDifference(const Tensor& a, const Tensor& b) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = a.GetAsDouble(i) - b.GetAsDouble(i);
    diff += d * d;
    norm += b.GetAsDouble(i) * b.GetAsDouble(i);
  }
  const double relative = std::sqrt(diff / std::max(norm, 1e-300));
  std::printf("relative difference %.3g\n", relative);
  return relative;
}

TEST_P(CollectiveLaunchTest, RanksMatchOneProcessOnTheGlobalBatch) {
  const int ranks = GetParam();
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
    EXPECT_LE(RelativeDifference(got.at(name), value), 1e-5) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollectiveLaunchTest, ::testing::Values(2, 3));

TEST_F(CollectiveLaunchTest, AKilledRankStopsTheOthersWithin10sNamingIt) {
  const std::string master = "127.0.0.1:" + std::to_string(FreePort());
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
  kill(ranks[1]->pid, SIGKILL);
  const auto killed = Clock::now();
  for (int r : {0, 2}) {
    ASSERT_TRUE(ranks[r]->Wait(10s)) << "rank " << r << ":\n" << ranks[r]->Output();
    EXPECT_EQ(ranks[r]->status, 1) << ranks[r]->Output();
    EXPECT_NE(ranks[r]->Output().find("rank 1 left the group"), std::string::npos)
        << ranks[r]->Output();
  }
  const auto took = Clock::now() - killed;
  std::printf("the other ranks exited %.2f s after the kill\n",
              std::chrono::duration<double>(took).count());
  EXPECT_LT(took, 10s);
}

}  // namespace
}  // namespace rill
