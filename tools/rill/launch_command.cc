// rill launch: a whole distributed job on this machine — the programs
// transpiled, M parameter servers and N trainers started as child processes
// on loopback, their output streamed with a prefix; or, with --collective, N
// ranks of a collective job (`rill train --collective`, no servers). Any
// process manager can do the same with `rill pserver` and `rill train --role
// trainer` (or the RILL_* environment variables); this is the one-command
// version.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "rill/error.h"
#include "tools/rill/child_processes.h"
#include "tools/rill/commands.h"
#include "tools/rill/flags.h"

namespace rill::cli {
namespace {

// A free TCP port on loopback (the kernel picks it; released for the server).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  RILL_CHECK(fd >= 0, kIo, "cannot open a socket to find a free port");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  close(fd);
  RILL_CHECK(ok, kIo, "cannot find a free port on 127.0.0.1");
  return ntohs(address.sin_port);
}

std::string RandomToken() {
  std::random_device device;
  char text[33];
  for (int i = 0; i < 4; ++i) std::snprintf(text + 8 * i, 9, "%08x", device());
  return text;
}

std::string SelfPath() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

struct LaunchFlags {
  int trainers = 2;
  int pservers = 1;
  std::string model = "mlp";
  std::string optimizer = "adam";
  std::string lr = "0.001";
  std::string seed = "0";
  bool async = false;
  std::string token;
  std::string dir;
  int64_t checkpoint_every = 0;
  int peer_timeout_ms = 5000;
  int grace_ms = 15000;
  bool collective = false;
  int nprocs = 0;  // --collective: ranks (0: not given)
  std::vector<std::string> train_flags;
};

// The token, or a random one.
std::string TokenOf(const LaunchFlags& flags) {
  return flags.token.empty() ? RandomToken() : flags.token;
}

// Reports the children that failed; the exit status of the launch.
int Report(ChildProcesses& job, int grace_ms) {
  int failed = 0;
  for (const auto& child : job.Wait(std::chrono::milliseconds(grace_ms))) {
    if (child.status == 0) continue;
    ++failed;
    std::fprintf(stderr, "rill launch: %s %s\n", child.name.c_str(),
                 ChildProcesses::DescribeStatus(child.status).c_str());
  }
  std::printf("rill launch: %s\n", failed ? "failed" : "all processes finished");
  return failed ? kExitFailure : kExitOk;
}

// N ranks of `rill train --collective` on loopback: rank 0's rendezvous on a
// free port, the job's token and each rank in the environment (RILL_*).
int LaunchCollective(const LaunchFlags& flags) {
  const int n = flags.nprocs > 0 ? flags.nprocs : 2;
  const std::string master = "127.0.0.1:" + std::to_string(FreePort());
  const std::string rill = SelfPath();
  std::printf("rill launch: %d ranks of a collective job, rendezvous at %s\n", n, master.c_str());
  std::fflush(stdout);
  const std::string token = TokenOf(flags);
  ChildProcesses job;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> argv = {rill,
                                     "train",
                                     "--collective",
                                     "--model",
                                     flags.model,
                                     "--optimizer",
                                     flags.optimizer,
                                     "--lr",
                                     flags.lr,
                                     "--seed",
                                     flags.seed,
                                     "--peer-timeout-ms",
                                     std::to_string(flags.peer_timeout_ms)};
    argv.insert(argv.end(), flags.train_flags.begin(), flags.train_flags.end());
    job.Start("rank " + std::to_string(r), argv,
              {{"RILL_TOKEN", token},
               {"RILL_RANK", std::to_string(r)},
               {"RILL_WORLD_SIZE", std::to_string(n)},
               {"RILL_MASTER", master}});
  }
  return Report(job, flags.grace_ms);
}

// Runs `rill transpile` into `dir` and waits for it; false (said on stderr) if it failed.
bool Transpile(const std::string& rill, int trainers, const std::string& endpoints,
               const std::string& dir, const std::vector<std::string>& model_flags, bool async) {
  ChildProcesses transpile;
  std::vector<std::string> argv = {
      rill,         "transpile", "--trainers", std::to_string(trainers),
      "--pservers", endpoints,   "--out",      dir};
  argv.insert(argv.end(), model_flags.begin(), model_flags.end());
  if (async) argv.push_back("--async");
  transpile.Start("transpile", argv);
  const auto& done = transpile.Wait(std::chrono::milliseconds(0));
  if (done[0].status != 0) {
    std::fprintf(stderr, "rill launch: rill transpile %s\n",
                 ChildProcesses::DescribeStatus(done[0].status).c_str());
    return false;
  }
  return true;
}

int Launch(const LaunchFlags& flags) {
  if (flags.collective) return LaunchCollective(flags);
  if (flags.nprocs > 0) throw UsageError("--nprocs counts the ranks of a --collective job");
  const int trainers = flags.trainers, pservers = flags.pservers;
  const int peer_timeout_ms = flags.peer_timeout_ms, grace_ms = flags.grace_ms;
  const std::string &model = flags.model, &optimizer = flags.optimizer, &lr = flags.lr,
                    &seed = flags.seed;
  std::string token = TokenOf(flags), dir = flags.dir;
  const int64_t checkpoint_every = flags.checkpoint_every;
  const bool async = flags.async;
  const std::vector<std::string>& train_flags = flags.train_flags;
  if (dir.empty()) {
    char pattern[] = "/tmp/rill-launch-XXXXXX";
    RILL_CHECK(mkdtemp(pattern) != nullptr, kIo, "cannot create a directory under /tmp");
    dir = pattern;
  }
  // The programs and the checkpoints go there: an unusable --dir fails now, naming it.
  std::error_code created;
  std::filesystem::create_directories(dir, created);
  RILL_CHECK(!created, kIo, "--dir ", dir, ": cannot create it: ", created.message());
  const std::string rill = SelfPath();
  std::string endpoints;
  for (int i = 0; i < pservers; ++i) {
    endpoints += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(FreePort());
  }
  const std::vector<std::string> model_flags = {"--model", model, "--optimizer", optimizer,
                                                "--lr",    lr,    "--seed",      seed};
  const std::vector<std::string> job_flags = {"--trainers",        std::to_string(trainers),
                                              "--pservers",        endpoints,
                                              "--peer-timeout-ms", std::to_string(peer_timeout_ms)};
  const std::map<std::string, std::string> env = {{"RILL_TOKEN", token}};
  std::printf("rill launch: %d trainers, %d parameter servers (%s), programs in %s\n", trainers,
              pservers, endpoints.c_str(), dir.c_str());
  if (!Transpile(rill, trainers, endpoints, dir, model_flags, async)) return kExitFailure;
  ChildProcesses job;
  for (int i = 0; i < pservers; ++i) {
    const std::string prefix = dir + "/pserver" + std::to_string(i);
    std::vector<std::string> argv = {
        rill, "pserver", "--program", prefix + ".main.pbtxt", "--server-index", std::to_string(i)};
    argv.insert(argv.end(), job_flags.begin(), job_flags.end());
    if (checkpoint_every > 0) {
      argv.insert(argv.end(), {"--checkpoint", prefix + ".ckpt", "--checkpoint-every",
                               std::to_string(checkpoint_every)});
    }
    job.Start("pserver " + std::to_string(i), argv, env);
  }
  // The servers print their listening lines in any order: wait for all of them together.
  std::vector<std::string> servers;
  for (int i = 0; i < pservers; ++i) servers.push_back("pserver " + std::to_string(i));
  const std::vector<std::string> silent =
      job.WaitForLines(servers, "listening on", std::chrono::seconds(60));
  if (!silent.empty()) {
    for (const std::string& name : silent) {
      std::fprintf(stderr, "rill launch: %s did not start listening\n", name.c_str());
    }
    job.KillAll();
    job.Wait(std::chrono::milliseconds(0));
    return kExitFailure;
  }
  for (int i = 0; i < trainers; ++i) {
    std::vector<std::string> argv = {rill,      "train",        "--role",
                                     "trainer", "--trainer-id", std::to_string(i)};
    argv.insert(argv.end(), job_flags.begin(), job_flags.end());
    argv.insert(argv.end(), model_flags.begin(), model_flags.end());
    if (async) argv.push_back("--async");
    argv.insert(argv.end(), train_flags.begin(), train_flags.end());
    job.Start("trainer " + std::to_string(i), argv, env);
  }
  return Report(job, grace_ms);
}

}  // namespace

Command AddLaunchCommand(CLI::App& rill) {
  auto flags = std::make_shared<LaunchFlags>();
  CLI::App* app =
      rill.add_subcommand("launch",
                          "a distributed job on this machine: parameter servers and trainers, or\n"
                          "the ranks of a collective job (--collective)");
  app->add_option("--trainers", flags->trainers, "trainer processes")
      ->type_name("N")
      ->check(AtLeast(1));
  app->add_option("--pservers", flags->pservers, "parameter-server processes")
      ->type_name("M")
      ->check(AtLeast(1));
  app->add_option("--model", flags->model,
                  "the model (as rill train --model), for the transpiler and the trainers");
  app->add_option("--optimizer", flags->optimizer,
                  "sgd, momentum, adam or adamw (weight decay 0.01)");
  app->add_option("--lr", flags->lr, "learning rate")->type_name("X")->check(Positive());
  app->add_option("--seed", flags->seed, "seed of the initialisers")->type_name("N");
  app->add_flag("--async", flags->async, "apply each gradient on arrival (default: sync)");
  app->add_option("--token", flags->token,
                  "the job's shared secret, given to the children as RILL_TOKEN")
      ->type_name("T")
      ->default_str("a random one");
  app->add_option("--dir", flags->dir, "where the programs (and checkpoints) go")
      ->type_name("DIR")
      ->default_str("a new directory under /tmp");
  app->add_option("--checkpoint-every", flags->checkpoint_every,
                  "servers save their variables every K steps to DIR/pserver<i>.ckpt (the\n"
                  "one before: .prev); a job started again with the same DIR goes on from\n"
                  "the newest step that every server has (0: never)")
      ->type_name("K")
      ->check(AtLeast(0));
  app->add_option("--peer-timeout-ms", flags->peer_timeout_ms,
                  "a peer silent this long is declared dead")
      ->type_name("N")
      ->check(AtLeast(2));
  app->add_option("--grace-ms", flags->grace_ms,
                  "after one process fails, how long the others have to stop on\n"
                  "their own before they are killed")
      ->type_name("N")
      ->check(AtLeast(0));
  app->add_flag("--collective", flags->collective,
                "no servers: --nprocs ranks of `rill train --collective` that average\n"
                "their gradients with Gloo (RILL_RANK, RILL_WORLD_SIZE, RILL_MASTER and\n"
                "RILL_TOKEN set for each)");
  app->add_option("--nprocs", flags->nprocs, "--collective: rank processes (default 2)")
      ->type_name("N")
      ->check(AtLeast(1));
  app->add_option("TRAIN_FLAGS", flags->train_flags,
                  "after --: flags for every trainer (for example --epochs 1 --batch 32\n"
                  "--max-steps 50)")
      ->default_str("");
  app->footer("Exit status: 0 when every process succeeded, 1 otherwise.");
  return {app, [flags] { return Launch(*flags); }};
}

}  // namespace rill::cli
