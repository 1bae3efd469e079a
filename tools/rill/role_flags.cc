#include "tools/rill/role_flags.h"

#include <cstdlib>

namespace rill::cli {

const char* const kRoleFlagsUsage =
    R"(  --role trainer|pserver  this process's role in a distributed job (env RILL_ROLE)
  --trainer-id N           this trainer's index (env RILL_TRAINER_ID)
  --trainers N             trainers in the job (env RILL_TRAINERS)
  --pservers H:P,...       the servers' endpoints, in server order (env RILL_PSERVERS)
  --server-index N         which of them this server is (env RILL_SERVER_INDEX)
  --token T                shared secret peers must present (env RILL_TOKEN)
  --async                  apply each gradient on arrival (default: sync, a barrier of trainers)
  --heartbeat-ms N         heartbeat period (default 500)
  --peer-timeout-ms N      a peer silent this long is declared dead (default 5000)
  --connect-timeout-ms N   how long to wait for peers to come up (default 30000)
  --max-message-mb N       larger wire messages are rejected (default 256)
)";

void RoleFlags::Bind(Flags& flags) {
  flags.String("--role", &role);
  flags.Int("--trainer-id", &trainer_id);
  flags.Int("--trainers", &trainers);
  flags.String("--pservers", &pservers);
  flags.Int("--server-index", &server_index);
  flags.String("--token", &token);
  flags.Bool("--async", &async);
  flags.Int("--heartbeat-ms", &heartbeat_ms);
  flags.Int("--peer-timeout-ms", &peer_timeout_ms);
  flags.Int("--connect-timeout-ms", &connect_timeout_ms);
  flags.Int64("--max-message-mb", &max_message_mb);
}

namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// Sets *out from the environment variable when unset (< 0 or 0 as `unset`).
std::string IntFromEnv(const char* name, int unset, int* out) {
  if (*out != unset) return "";
  const std::string value = Env(name);
  if (value.empty()) return "";
  char* end = nullptr;
  const long parsed = std::strtol(value.c_str(), &end, 10);
  if (end == value.c_str() || *end != '\0' || parsed < 0) {
    return std::string(name) + "=\"" + value + "\" is not a non-negative integer";
  }
  *out = static_cast<int>(parsed);
  return "";
}

}  // namespace

std::string RoleFlags::FromEnvironment() {
  if (role.empty()) role = Env("RILL_ROLE");
  if (pservers.empty()) pservers = Env("RILL_PSERVERS");
  if (token.empty()) token = Env("RILL_TOKEN");
  for (auto [name, unset, out] :
       {std::tuple{"RILL_TRAINER_ID", -1, &trainer_id}, std::tuple{"RILL_TRAINERS", 0, &trainers},
        std::tuple{"RILL_SERVER_INDEX", -1, &server_index}}) {
    if (std::string error = IntFromEnv(name, unset, out); !error.empty()) return error;
  }
  if (!role.empty() && role != "trainer" && role != "pserver") {
    return "the role must be trainer or pserver, not \"" + role + "\"";
  }
  if (heartbeat_ms < 1 || peer_timeout_ms <= heartbeat_ms || connect_timeout_ms < 1 ||
      max_message_mb < 1) {
    return "--heartbeat-ms must be >= 1, --peer-timeout-ms above it, --connect-timeout-ms and "
           "--max-message-mb >= 1";
  }
  return "";
}

std::vector<std::string> RoleFlags::PserverList() const { return SplitCommas(pservers); }

}  // namespace rill::cli
