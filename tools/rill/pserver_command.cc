// rill pserver: serves one parameter-server program written by
// `rill transpile` until every trainer of the job has finished.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "rill/program_io.h"
#include "rill/pserver.h"
#include "rill/runtime.h"
#include "tools/rill/commands.h"
#include "tools/rill/flags.h"
#include "tools/rill/role_flags.h"

namespace rill::cli {
namespace {

constexpr const char* kUsage = R"(usage: rill pserver --program FILE [flags]
  --program FILE           the server's program (pserver<i>.main.pbtxt from rill transpile)
  --startup FILE           its startup program (default: FILE with .main. -> .startup.)
  --endpoint HOST:PORT     where it listens (default: entry --server-index of --pservers)
  --bind ADDR              the address it binds (default 127.0.0.1: loopback only)
  --checkpoint FILE        save variables and step here every --checkpoint-every steps,
                           the one before at FILE.prev; a restarted job goes on from the
                           newest step every server has
  --checkpoint-every K     (default 0: never)
  --threads N              scheduler threads (default 2)
)";

std::string DefaultStartup(const std::string& program) {
  const size_t at = program.rfind(".main.");
  if (at == std::string::npos) return "";
  return program.substr(0, at) + ".startup." + program.substr(at + 6);
}

}  // namespace

int PserverCommand(const std::vector<std::string>& args) {
  std::string program, startup, endpoint, bind = "127.0.0.1", checkpoint;
  int64_t checkpoint_every = 0;
  int threads = 2;
  RoleFlags role;
  Flags flags("rill pserver", std::string(kUsage) + kRoleFlagsUsage);
  flags.String("--program", &program);
  flags.String("--startup", &startup);
  flags.String("--endpoint", &endpoint);
  flags.String("--bind", &bind);
  flags.String("--checkpoint", &checkpoint);
  flags.Int64("--checkpoint-every", &checkpoint_every);
  flags.Int("--threads", &threads);
  role.Bind(flags);
  if (int rc = flags.Parse(args); rc >= 0) return rc;
  if (std::string error = role.FromEnvironment(); !error.empty()) return flags.UsageError(error);
  if (program.empty()) return flags.UsageError("--program is required");
  if (startup.empty()) startup = DefaultStartup(program);
  if (startup.empty()) return flags.UsageError("--startup is required (FILE has no .main.)");
  if (endpoint.empty()) {
    const auto list = role.PserverList();
    if (role.server_index < 0 || role.server_index >= static_cast<int>(list.size())) {
      return flags.UsageError("--endpoint, or --pservers with --server-index, is required");
    }
    endpoint = list[static_cast<size_t>(role.server_index)];
  }
  if (checkpoint_every < 0 || threads < 1) {
    return flags.UsageError("--checkpoint-every must be >= 0 and --threads >= 1");
  }

  ParameterServerOptions options;
  options.endpoint = endpoint;
  options.bind = bind;
  options.token = role.token;
  options.checkpoint_path = checkpoint;
  options.checkpoint_every = checkpoint_every;
  options.heartbeat = std::chrono::milliseconds(role.heartbeat_ms);
  options.peer_timeout = std::chrono::milliseconds(role.peer_timeout_ms);
  options.connect_timeout = std::chrono::milliseconds(role.connect_timeout_ms);
  options.limits.max_message_bytes = static_cast<size_t>(role.max_message_mb) << 20;
  auto runtime = std::make_shared<Runtime>(threads, 1, /*network=*/true);
  ParameterServer server(LoadProgram(program), LoadProgram(startup), options, runtime);
  std::string steps;
  for (int64_t step : server.start_steps())
    steps += (steps.empty() ? "" : ", ") + std::to_string(step);
  std::printf("pserver listening on %s:%u (bound to %s), can start from step %s\n",
              endpoint.substr(0, endpoint.rfind(':')).c_str(), server.port(), bind.c_str(),
              steps.empty() ? "any (it holds no parameters)" : steps.c_str());
  std::fflush(stdout);
  server.Serve();
  std::printf("pserver done at step %lld\n", static_cast<long long>(server.step()));
  return kExitOk;
}

}  // namespace rill::cli
