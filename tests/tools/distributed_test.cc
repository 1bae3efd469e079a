// Distributed jobs as separate processes on loopback, driven through the
// `rill` command: rill transpile, rill pserver, rill train --role trainer
// and rill launch. Sync training on 2 trainers + 2 servers ends with the
// parameters of a single-process run on the same global batch; async
// training converges; each trainer's --json line splits its steps' time
// into sending and waiting for parameters; a trainer killed with SIGKILL stops the others with
// an error naming it; a job whose server was killed resumes from the
// server's checkpoint, and servers killed again and again at random steps
// always resume from a step they share; a trainer that cannot reach a server
// exits naming it; an unwritable checkpoint path and a wrong token are refused.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rill/checkpoint.h"
#include "rill/tensor.h"
#include "tests/testing/cli_process.h"
#include "tests/testing/ports.h"
#include "tests/testing/training.h"

namespace rill {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using Process = testing::CliProcess;

class DistributedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("distributed_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            // Its own per process: two builds' runs of a test must not share one.
            std::to_string(getpid()));
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

  // Runs to the end (at most `timeout`), returns the exit status.
  int Run(const std::string& name, const std::vector<std::string>& args,
          std::chrono::milliseconds timeout = 300s) {
    Process& p = Start(name, args);
    if (!p.Wait(timeout)) {
      ADD_FAILURE() << name << " did not finish in " << timeout.count() << " ms:\n" << p.Output();
      p.Kill();
    }
    return p.status;
  }

  std::vector<std::string> Endpoints(int servers) {
    std::vector<std::string> list;
    for (int i = 0; i < servers; ++i)
      list.push_back("127.0.0.1:" + std::to_string(testing::ClosedLoopbackPort()));
    return list;
  }

  static std::string Join(const std::vector<std::string>& list) {
    std::string out;
    for (const auto& item : list) out += (out.empty() ? "" : ",") + item;
    return out;
  }

  std::filesystem::path dir_;
  std::vector<std::unique_ptr<Process>> processes_;
};

// "fc_3.w", "conv2d_0.b": a layer's parameter (not its optimizer state).
// (No std::regex: GCC 12 warns inside it under -O2 with sanitizers.)
bool IsParameterName(const std::string& name) {
  int layer = 0;
  char kind = 0;
  int used = 0;
  for (const char* prefix : {"fc_%d.%c%n", "conv2d_%d.%c%n"}) {
    used = 0;
    if (std::sscanf(name.c_str(), prefix, &layer, &kind, &used) == 2 &&
        static_cast<size_t>(used) == name.size() && (kind == 'w' || kind == 'b')) {
      return true;
    }
  }
  return false;
}

// The parameters (fc_N.w, fc_N.b) of a checkpoint.
std::map<std::string, Tensor> Parameters(const std::string& path) {
  std::map<std::string, Tensor> params;
  const proto::TensorSet set = ReadTensorSet(path);
  for (const auto& t : set.tensors()) {
    if (IsParameterName(t.name())) params[t.name()] = TensorFromProto(t, path);
  }
  return params;
}

class SyncTraining : public DistributedTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(SyncTraining, TwoTrainersTwoServersMatchOneProcess) {
  const std::string model = GetParam();
  const std::vector<std::string> train = {"--model",     model, "--epochs", "1",
                                          "--max-steps", "50",  "--seed",   "3"};
  std::vector<std::string> single = {"train", "--input", "preloaded",        "--batch",
                                     "64",    "--save",  Path("single.ckpt")};
  single.insert(single.end(), train.begin(), train.end());
  ASSERT_EQ(Run("single", single), 0) << processes_.back()->Output();

  const auto endpoints = Endpoints(2);
  ASSERT_EQ(Run("transpile", {"transpile", "--model", model, "--seed", "3", "--trainers", "2",
                              "--pservers", Join(endpoints), "--out", Path("job")}),
            0)
      << processes_.back()->Output();
  std::vector<Process*> job;
  for (int i = 0; i < 2; ++i) {
    job.push_back(
        &Start("pserver" + std::to_string(i),
               {"pserver", "--program", Path("job/pserver" + std::to_string(i) + ".main.pbtxt"),
                "--endpoint", endpoints[static_cast<size_t>(i)]}));
  }
  for (int i = 0; i < 2; ++i) {
    std::vector<std::string> args = {"train", "--batch", "32", "--save",
                                     Path("trainer" + std::to_string(i) + ".ckpt")};
    args.insert(args.end(), train.begin(), train.end());
    // The role from the environment, as a process manager would set it.
    job.push_back(&Start("trainer" + std::to_string(i), args,
                         {{"RILL_ROLE", "trainer"},
                          {"RILL_TRAINER_ID", std::to_string(i)},
                          {"RILL_TRAINERS", "2"},
                          {"RILL_PSERVERS", Join(endpoints)}}));
  }
  for (Process* p : job) {
    ASSERT_TRUE(p->Wait(300s)) << p->Output();
    ASSERT_EQ(p->status, 0) << p->Output();
  }
  const auto expected = Parameters(Path("single.ckpt"));
  ASSERT_FALSE(expected.empty());
  for (int i = 0; i < 2; ++i) {
    const auto got = Parameters(Path("trainer" + std::to_string(i) + ".ckpt"));
    ASSERT_EQ(got.size(), expected.size());
    for (const auto& [name, value] : expected) {
      EXPECT_LE(testing::RelativeDifference(got.at(name), value), 1e-5)
          << "trainer " << i << " " << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SyncTraining, ::testing::Values("linreg", "mlp"));

TEST_F(DistributedTest, AsyncTrainingConverges) {
  Process& launch = Start("launch", {"launch", "--trainers", "2", "--pservers", "1", "--async",
                                     "--model", "mlp", "--dir", Path("job"), "--", "--batch", "32",
                                     "--epochs", "1", "--max-steps", "150"});
  ASSERT_TRUE(launch.Wait(300s)) << launch.Output();
  ASSERT_EQ(launch.status, 0) << launch.Output();
  const std::string output = launch.Output();
  int trainers = 0;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    int id = -1;
    double train_loss = 0, test_loss = 0, accuracy = 0;
    if (std::sscanf(line.c_str(),
                    "[trainer %d] epoch 1: train loss %lf, test loss %lf, test accuracy %lf", &id,
                    &train_loss, &test_loss, &accuracy) != 4) {
      continue;
    }
    ++trainers;
    // From about 2.3 (chance over 10 classes) at the start.
    EXPECT_LT(test_loss, 0.9) << line;
    EXPECT_GT(accuracy, 0.65) << line;
  }
  EXPECT_EQ(trainers, 2) << output;
}

// The time split of a trainer's steps (train --json: "seconds" of the
// training loop, of which "send_seconds" in the send ops' pushes and
// "wait_seconds" in the recv ops waiting for parameters; "steady_..." of the
// steps after the first 5). In sync mode every step pushes gradients and waits
// for the server to apply both trainers'.
TEST_F(DistributedTest, TrainersReportTheirStepTimeSplit) {
  Process& launch = Start("launch", {"launch", "--trainers", "2", "--pservers", "1", "--model",
                                     "mlp", "--dir", Path("job"), "--", "--batch", "32", "--epochs",
                                     "1", "--max-steps", "40", "--json"});
  ASSERT_TRUE(launch.Wait(300s)) << launch.Output();
  ASSERT_EQ(launch.status, 0) << launch.Output();
  const std::string output = launch.Output();
  std::map<int, nlohmann::json> trainers;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    int id = -1, used = 0;
    if (std::sscanf(line.c_str(), "[trainer %d] %n", &id, &used) != 1 || used == 0 ||
        line[static_cast<size_t>(used)] != '{') {
      continue;
    }
    trainers[id] = nlohmann::json::parse(line.substr(static_cast<size_t>(used)));
  }
  ASSERT_EQ(trainers.size(), 2u) << output;
  for (const auto& [id, json] : trainers) {
    ASSERT_TRUE(json.contains("send_seconds") && json.contains("wait_seconds")) << json.dump();
    const double total = json.at("seconds").get<double>();
    const double send = json.at("send_seconds").get<double>();
    const double wait = json.at("wait_seconds").get<double>();
    EXPECT_GT(send, 0) << "trainer " << id << ": " << json.dump();
    EXPECT_GT(wait, 0) << "trainer " << id << ": " << json.dump();
    // "seconds" is rounded to the millisecond.
    EXPECT_LE(send + wait, total + 1e-3) << "trainer " << id << ": " << json.dump();
    // The steps after the first 5, timed apart (what the benchmarks compare).
    EXPECT_EQ(json.at("steady_steps").get<int>(), 35) << json.dump();
    const double steady = json.at("steady_seconds").get<double>();
    EXPECT_GT(steady, 0) << json.dump();
    EXPECT_LE(steady, total + 1e-3) << json.dump();
    EXPECT_NEAR(json.at("steady_samples_per_sec").get<double>(), 35 * 32 / steady,
                0.01 * 35 * 32 / steady)
        << json.dump();
  }
}

TEST_F(DistributedTest, KilledTrainerStopsServerAndOtherTrainerWithin10s) {
  const auto endpoints = Endpoints(1);
  ASSERT_EQ(Run("transpile", {"transpile", "--model", "mlp", "--trainers", "2", "--pservers",
                              endpoints[0], "--out", Path("job")}),
            0);
  Process& server = Start("pserver", {"pserver", "--program", Path("job/pserver0.main.pbtxt"),
                                      "--endpoint", endpoints[0]});
  std::vector<Process*> trainers;
  for (int i = 0; i < 2; ++i) {
    trainers.push_back(&Start("trainer" + std::to_string(i),
                              {"train", "--role", "trainer", "--trainer-id", std::to_string(i),
                               "--trainers", "2", "--pservers", endpoints[0], "--epochs", "1"}));
  }
  // Both: a trainer that has not connected yet when the server stops keeps
  // trying to reach it (the server may come back), for its connect timeout.
  ASSERT_TRUE(server.WaitForOutput("trainer 0 connected", 60s)) << server.Output();
  ASSERT_TRUE(server.WaitForOutput("trainer 1 connected", 60s)) << server.Output();
  std::this_thread::sleep_for(1500ms);  // mid-training
  kill(trainers[1]->pid, SIGKILL);
  const auto killed = Clock::now();
  ASSERT_TRUE(server.Wait(10s)) << server.Output();
  ASSERT_TRUE(trainers[0]->Wait(10s)) << trainers[0]->Output();
  EXPECT_LT(Clock::now() - killed, 10s);
  EXPECT_EQ(server.status, 1) << server.Output();
  EXPECT_EQ(trainers[0]->status, 1) << trainers[0]->Output();
  EXPECT_NE(server.Output().find("trainer 1"), std::string::npos) << server.Output();
  EXPECT_NE(trainers[0]->Output().find("trainer 1"), std::string::npos) << trainers[0]->Output();
}

// Step of a server checkpoint (-1 while there is none).
int64_t CheckpointStep(const std::string& path) {
  if (!std::filesystem::exists(path)) return -1;
  try {
    return ReadCheckpointFile(path).step;
  } catch (const std::exception&) {
  }
  return -1;
}

TEST_F(DistributedTest, KilledServerRestartsFromItsCheckpoint) {
  const auto endpoints = Endpoints(1);
  ASSERT_EQ(Run("transpile", {"transpile", "--model", "mlp", "--trainers", "2", "--pservers",
                              endpoints[0], "--out", Path("job")}),
            0);
  const std::vector<std::string> serve = {
      "pserver",    "--program",    Path("job/pserver0.main.pbtxt"), "--endpoint",
      endpoints[0], "--checkpoint", Path("pserver0.ckpt"),           "--checkpoint-every",
      "10"};
  auto trainer = [&](int i, const std::string& run, const std::string& max_steps) -> Process& {
    return Start("trainer" + std::to_string(i) + run,
                 {"train", "--role", "trainer", "--trainer-id", std::to_string(i), "--trainers",
                  "2", "--pservers", endpoints[0], "--epochs", "1", "--max-steps", max_steps});
  };
  Process& server = Start("pserver", serve);
  Process& t0 = trainer(0, "a", "400");
  Process& t1 = trainer(1, "a", "400");
  const auto deadline = Clock::now() + 120s;
  while (CheckpointStep(Path("pserver0.ckpt")) < 20 && Clock::now() < deadline &&
         !server.Wait(0ms)) {
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_GE(CheckpointStep(Path("pserver0.ckpt")), 20) << server.Output();
  kill(server.pid, SIGKILL);
  const auto killed = Clock::now();
  ASSERT_TRUE(t0.Wait(10s) && t1.Wait(10s)) << t0.Output() << t1.Output();
  EXPECT_LT(Clock::now() - killed, 10s);
  EXPECT_EQ(t0.status, 1);
  EXPECT_NE(t0.Output().find("parameter server"), std::string::npos) << t0.Output();
  // The newest checkpoint the server left: a kill between a save's two
  // renames leaves none at pserver0.ckpt and the one before at .prev (seen
  // once under load).
  int64_t saved = CheckpointStep(Path("pserver0.ckpt"));
  if (saved < 0) saved = CheckpointStep(Path("pserver0.ckpt.prev"));
  ASSERT_GE(saved, 20);

  Process& again = Start("pserver-again", serve);
  ASSERT_TRUE(again.WaitForOutput("listening", 60s)) << again.Output();
  EXPECT_NE(again.Output().find("step " + std::to_string(saved)), std::string::npos)
      << again.Output();
  const std::string until = std::to_string(saved + 10);
  Process& r0 = trainer(0, "b", until);
  Process& r1 = trainer(1, "b", until);
  for (Process* p : {&r0, &r1, &again}) {
    ASSERT_TRUE(p->Wait(120s)) << p->Output();
    EXPECT_EQ(p->status, 0) << p->Output();
  }
  EXPECT_NE(r0.Output().find("resuming at step " + std::to_string(saved)), std::string::npos)
      << r0.Output();
  EXPECT_NE(again.Output().find("done at step " + until), std::string::npos) << again.Output();
}

// The trainer's link to the first server is up when the second cannot be
// reached: it exits 1 naming that server instead of hanging in its runtime's
// shutdown, and the first server notices the trainer is gone.
TEST_F(DistributedTest, ATrainerThatCannotReachAServerExitsNamingIt) {
  const auto endpoints = Endpoints(2);
  ASSERT_EQ(Run("transpile", {"transpile", "--model", "linreg", "--trainers", "1", "--pservers",
                              Join(endpoints), "--out", Path("job")}),
            0);
  Process& server = Start("pserver", {"pserver", "--program", Path("job/pserver0.main.pbtxt"),
                                      "--endpoint", endpoints[0]});
  ASSERT_TRUE(server.WaitForOutput("listening", 60s)) << server.Output();
  Process& trainer =
      Start("trainer", {"train", "--role", "trainer", "--trainer-id", "0", "--trainers", "1",
                        "--pservers", Join(endpoints), "--model", "linreg", "--max-steps", "5",
                        "--connect-timeout-ms", "2000"});
  ASSERT_TRUE(trainer.Wait(60s)) << "the trainer hangs:\n" << trainer.Output();
  EXPECT_EQ(trainer.status, 1) << trainer.Output();
  EXPECT_NE(trainer.Output().find("cannot connect to " + endpoints[1]), std::string::npos)
      << trainer.Output();
  ASSERT_TRUE(server.Wait(30s)) << server.Output();
  EXPECT_EQ(server.status, 1) << server.Output();
  EXPECT_NE(server.Output().find("trainer 0"), std::string::npos) << server.Output();
}

TEST_F(DistributedTest, AServerRefusesAnUnwritableCheckpointPathAtStart) {
  const auto endpoints = Endpoints(1);
  ASSERT_EQ(Run("transpile", {"transpile", "--model", "linreg", "--trainers", "1", "--pservers",
                              endpoints[0], "--out", Path("job")}),
            0);
  const std::string checkpoint = Path("missing/pserver0.ckpt");
  EXPECT_EQ(Run("pserver",
                {"pserver", "--program", Path("job/pserver0.main.pbtxt"), "--endpoint",
                 endpoints[0], "--checkpoint", checkpoint, "--checkpoint-every", "5"},
                60s),
            1);
  const std::string output = processes_.back()->Output();
  EXPECT_NE(output.find(checkpoint + ": not writable"), std::string::npos) << output;
  EXPECT_EQ(output.find("listening"), std::string::npos) << output;
}

// The newest step a server can start from: its checkpoint's, or the previous
// one's when it was killed between moving the newest aside and writing the
// next (0 without either).
int64_t NewestStep(const std::string& path) {
  for (const std::string& file : {path, path + ".prev"}) {
    const int64_t step = CheckpointStep(file);
    if (step >= 0) return step;
  }
  return 0;
}

// Two servers checkpointing every step are killed, one at a time, at random
// steps, four times (each server twice); every restart goes on from the
// newest step both servers have (read from their files before the restart:
// the servers and the trainers must all say that step), and the job, run to
// its end, has the parameters of a single process trained on the global
// batch without a break. The kill points come from RILL_KILL_SEED (default:
// the clock), printed to replay a failure.
TEST_F(DistributedTest, ServersKilledAtRandomStepsResumeFromACommonStepAndFinish) {
  const auto endpoints = Endpoints(2);
  const std::string last = "200";
  const std::vector<std::string> train = {"--model",     "linreg", "--epochs", "1",
                                          "--max-steps", last,     "--seed",   "5"};
  ASSERT_EQ(Run("transpile", {"transpile", "--model", "linreg", "--seed", "5", "--trainers", "2",
                              "--pservers", Join(endpoints), "--out", Path("job")}),
            0);
  const std::vector<std::string> checkpoints = {Path("pserver0.ckpt"), Path("pserver1.ckpt")};
  // One run of the job: 2 servers, 2 trainers (trainer 0 saving its parameters to `save`).
  auto start = [&](const std::string& run, const std::string& save) {
    std::vector<Process*> processes;
    for (int i = 0; i < 2; ++i) {
      std::vector<std::string> args = {"pserver", "--program",
                                       Path("job/pserver" + std::to_string(i) + ".main.pbtxt"),
                                       "--endpoint", endpoints[static_cast<size_t>(i)]};
      args.insert(args.end(),
                  {"--checkpoint", checkpoints[static_cast<size_t>(i)], "--checkpoint-every", "1"});
      processes.push_back(&Start(run + "_pserver" + std::to_string(i), args));
    }
    for (int i = 0; i < 2; ++i) {
      std::vector<std::string> args = {"train",           "--role",     "trainer", "--trainer-id",
                                       std::to_string(i), "--trainers", "2",       "--pservers",
                                       Join(endpoints)};
      args.insert(args.end(), train.begin(), train.end());
      args.insert(args.end(), {"--batch", "16"});  // a global batch of 32
      if (i == 0 && !save.empty()) args.insert(args.end(), {"--save", save});
      processes.push_back(&Start(run + "_trainer" + std::to_string(i), args));
    }
    return processes;  // servers 0, 1, then trainers 0, 1
  };
  // The reference: one process on the global batch.
  std::vector<std::string> single = {"train", "--input", "preloaded",           "--batch",
                                     "32",    "--save",  Path("reference.ckpt")};
  single.insert(single.end(), train.begin(), train.end());
  ASSERT_EQ(Run("single", single), 0) << processes_.back()->Output();

  const char* seed_text = std::getenv("RILL_KILL_SEED");
  const unsigned seed = seed_text ? static_cast<unsigned>(std::strtoul(seed_text, nullptr, 10))
                                  : static_cast<unsigned>(Clock::now().time_since_epoch().count());
  std::printf("RILL_KILL_SEED=%u\n", seed);
  std::mt19937 random(seed);
  constexpr int kKills = 4;
  int64_t resumed = 0;
  for (int round = 0; round <= kKills; ++round) {
    const std::string run = "run" + std::to_string(round);
    const int64_t common = std::min(NewestStep(checkpoints[0]), NewestStep(checkpoints[1]));
    EXPECT_GE(common, resumed) << "the job went back past a step it had resumed from";
    resumed = common;
    const bool final = round == kKills;
    std::vector<Process*> job = start(run, final ? Path("final.ckpt") : "");
    if (!final) {
      // Kill server (round % 2) once both have checkpointed a few steps more.
      const int64_t target = common + std::uniform_int_distribution<int64_t>(2, 10)(random);
      const auto deadline = Clock::now() + 120s;
      while (std::min(NewestStep(checkpoints[0]), NewestStep(checkpoints[1])) < target &&
             !job[0]->Wait(0ms) && !job[1]->Wait(0ms) && Clock::now() < deadline) {
        std::this_thread::sleep_for(10ms);
      }
      Process& victim = *job[static_cast<size_t>(round % 2)];
      ASSERT_FALSE(victim.Wait(0ms)) << "the server ended before step " << target << ":\n"
                                     << victim.Output();
      kill(victim.pid, SIGKILL);
      for (Process* p : job) ASSERT_TRUE(p->Wait(60s)) << "still running:\n" << p->Output();
      std::printf(
          "round %d: resumed from step %lld, killed server %d; checkpoints now at %lld "
          "and %lld\n",
          round, static_cast<long long>(common), round % 2,
          static_cast<long long>(NewestStep(checkpoints[0])),
          static_cast<long long>(NewestStep(checkpoints[1])));
    } else {
      for (Process* p : job) {
        ASSERT_TRUE(p->Wait(180s)) << p->Output();
        EXPECT_EQ(p->status, 0) << p->Output();
      }
    }
    const std::string from = "starting from step " + std::to_string(common) + " (";
    for (int i = 0; i < 2; ++i) {
      EXPECT_NE(job[static_cast<size_t>(i)]->Output().find(from), std::string::npos)
          << run << ", server " << i << ":\n"
          << job[static_cast<size_t>(i)]->Output();
      if (common > 0) {
        const std::string resuming = "resuming at step " + std::to_string(common) + "\n";
        EXPECT_NE(job[static_cast<size_t>(2 + i)]->Output().find(resuming), std::string::npos)
            << run << ", trainer " << i << ":\n"
            << job[static_cast<size_t>(2 + i)]->Output();
      }
    }
    if (HasFailure()) return;
  }
  for (int i = 0; i < 2; ++i) EXPECT_EQ(NewestStep(checkpoints[static_cast<size_t>(i)]), 200);
  const auto expected = Parameters(Path("reference.ckpt"));
  const auto got = Parameters(Path("final.ckpt"));
  ASSERT_EQ(got.size(), expected.size());
  for (const auto& [name, value] : expected) {
    EXPECT_LE(testing::RelativeDifference(got.at(name), value), 1e-5) << name;
  }
}

TEST_F(DistributedTest, WrongTokenIsRefused) {
  const auto endpoints = Endpoints(1);
  ASSERT_EQ(Run("transpile", {"transpile", "--model", "linreg", "--trainers", "1", "--pservers",
                              endpoints[0], "--out", Path("job")}),
            0);
  Process& server =
      Start("pserver",
            {"pserver", "--program", Path("job/pserver0.main.pbtxt"), "--endpoint", endpoints[0]},
            {{"RILL_TOKEN", "right"}});
  ASSERT_TRUE(server.WaitForOutput("listening", 60s)) << server.Output();
  const int status =
      Run("trainer",
          {"train", "--role", "trainer", "--trainer-id", "0", "--trainers", "1", "--pservers",
           endpoints[0], "--model", "linreg", "--token", "wrong", "--max-steps", "5"},
          60s);
  EXPECT_EQ(status, 1);
  // The handshake's HMAC fails (the token is never sent).
  EXPECT_NE(processes_.back()->Output().find("the job's tokens differ"), std::string::npos)
      << processes_.back()->Output();
  EXPECT_NE(server.Output().find("does not hold the job's token"), std::string::npos)
      << server.Output();
  EXPECT_FALSE(server.Wait(0ms)) << "the server stopped after refusing a trainer";
}

}  // namespace
}  // namespace rill
