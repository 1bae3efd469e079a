// rill pserver: serves one parameter-server program written by
// `rill transpile` until every trainer of the job has finished.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "rill/program_io.h"
#include "rill/pserver.h"
#include "rill/runtime.h"
#include "runtime/device/blas_threads.h"
#include "tools/rill/commands.h"
#include "tools/rill/flags.h"
#include "tools/rill/role_flags.h"

namespace rill::cli {
namespace {

std::string DefaultStartup(const std::string& program) {
  const size_t at = program.rfind(".main.");
  if (at == std::string::npos) return "";
  return program.substr(0, at) + ".startup." + program.substr(at + 6);
}

struct PserverFlags {
  std::string program;
  std::string startup;
  std::string endpoint;
  std::string bind = "127.0.0.1";
  std::string checkpoint;
  int64_t checkpoint_every = 0;
  int threads = 2;
  int blas_threads = 1;
  RoleFlags role;
};

int Serve(const PserverFlags& flags) {
  const RoleFlags& role = flags.role;
  role.Check();
  const std::string startup = flags.startup.empty() ? DefaultStartup(flags.program) : flags.startup;
  if (startup.empty()) throw UsageError("--startup is required (FILE has no .main.)");
  std::string endpoint = flags.endpoint;
  if (endpoint.empty()) {
    const auto list = role.PserverList();
    if (role.server_index < 0 || role.server_index >= static_cast<int>(list.size())) {
      throw UsageError("--endpoint, or --pservers with --server-index, is required");
    }
    endpoint = list[static_cast<size_t>(role.server_index)];
  }
  ParameterServerOptions options;
  options.endpoint = endpoint;
  options.bind = flags.bind;
  options.token = role.token;
  options.checkpoint_path = flags.checkpoint;
  options.checkpoint_every = flags.checkpoint_every;
  options.heartbeat = std::chrono::milliseconds(role.heartbeat_ms);
  options.peer_timeout = std::chrono::milliseconds(role.peer_timeout_ms);
  options.connect_timeout = std::chrono::milliseconds(role.connect_timeout_ms);
  options.limits = role.Limits();
  // A server's updates are elementwise: more OpenBLAS threads would only spin
  // (sched_yield) beside the trainers on the same cores.
  SetBlasThreads(flags.blas_threads);
  auto runtime = std::make_shared<Runtime>(flags.threads, 1);
  ParameterServer server(LoadProgram(flags.program), LoadProgram(startup), options, runtime);
  std::string steps;
  for (int64_t step : server.start_steps())
    steps += (steps.empty() ? "" : ", ") + std::to_string(step);
  std::printf("pserver listening on %s:%u (bound to %s), can start from step %s\n",
              endpoint.substr(0, endpoint.rfind(':')).c_str(), server.port(), flags.bind.c_str(),
              steps.empty() ? "any (it holds no parameters)" : steps.c_str());
  std::fflush(stdout);
  server.Serve();
  std::printf("pserver done at step %lld\n", static_cast<long long>(server.step()));
  return kExitOk;
}

}  // namespace

Command AddPserverCommand(CLI::App& rill) {
  auto flags = std::make_shared<PserverFlags>();
  CLI::App* app =
      rill.add_subcommand("pserver", "serve a parameter-server program (rill transpile writes it)");
  app->add_option("--program", flags->program,
                  "the server's program (pserver<i>.main.pbtxt from rill transpile)")
      ->type_name("FILE")
      ->required();
  app->add_option("--startup", flags->startup, "its startup program")
      ->type_name("FILE")
      ->default_str("FILE with .main. -> .startup.");
  app->add_option("--endpoint", flags->endpoint, "where it listens")
      ->type_name("HOST:PORT")
      ->default_str("entry --server-index of --pservers");
  app->add_option("--bind", flags->bind, "the address it binds (127.0.0.1: loopback only)")
      ->type_name("ADDR");
  app->add_option("--checkpoint", flags->checkpoint,
                  "save variables and step here every --checkpoint-every steps, the one\n"
                  "before at FILE.prev; a restarted job goes on from the newest step every\n"
                  "server has")
      ->type_name("FILE");
  app->add_option("--checkpoint-every", flags->checkpoint_every, "steps between saves (0: never)")
      ->type_name("K")
      ->check(AtLeast(0));
  app->add_option("--threads", flags->threads, "scheduler threads")
      ->type_name("N")
      ->check(AtLeast(1));
  app->add_option("--blas-threads", flags->blas_threads,
                  "OpenBLAS threads (the optimizers a server runs are elementwise)")
      ->type_name("N")
      ->check(AtLeast(1));
  flags->role.Bind(*app);
  return {app, [flags] { return Serve(*flags); }};
}

}  // namespace rill::cli
