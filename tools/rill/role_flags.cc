#include "tools/rill/role_flags.h"

namespace rill::cli {

void RoleFlags::Bind(CLI::App& app) {
  constexpr const char* kGroup = "Distributed job (flags, else the environment)";
  app.add_option("--role", role, "this process's role in a distributed job")
      ->envname("RILL_ROLE")
      ->check(CLI::IsMember({"trainer", "pserver"}))
      ->group(kGroup);
  app.add_option("--trainer-id", trainer_id, "this trainer's index")
      ->type_name("N")
      ->envname("RILL_TRAINER_ID")
      ->check(AtLeast(0, "RILL_TRAINER_ID"))
      ->default_str("")
      ->group(kGroup);
  app.add_option("--trainers", trainers, "trainers in the job")
      ->type_name("N")
      ->envname("RILL_TRAINERS")
      ->check(AtLeast(0, "RILL_TRAINERS"))
      ->default_str("")
      ->group(kGroup);
  app.add_option("--pservers", pservers, "the servers' endpoints, in server order")
      ->type_name("H:P,...")
      ->envname("RILL_PSERVERS")
      ->group(kGroup);
  app.add_option("--server-index", server_index, "which of them this server is")
      ->type_name("N")
      ->envname("RILL_SERVER_INDEX")
      ->check(AtLeast(0, "RILL_SERVER_INDEX"))
      ->default_str("")
      ->group(kGroup);
  app.add_option("--token", token, "shared secret peers must present")
      ->type_name("T")
      ->envname("RILL_TOKEN")
      ->group(kGroup);
  app.add_flag("--async", async,
               "apply each gradient on arrival (default: sync, a barrier of trainers)")
      ->group(kGroup);
  app.add_option("--heartbeat-ms", heartbeat_ms, "heartbeat period")
      ->type_name("N")
      ->check(AtLeast(1))
      ->group(kGroup);
  app.add_option("--peer-timeout-ms", peer_timeout_ms,
                 "a peer silent this long is declared dead (above --heartbeat-ms)")
      ->type_name("N")
      ->group(kGroup);
  app.add_option("--connect-timeout-ms", connect_timeout_ms,
                 "how long to wait for peers to come up")
      ->type_name("N")
      ->check(AtLeast(1))
      ->group(kGroup);
  app.add_option("--max-message-mb", max_message_mb, "larger wire messages are rejected")
      ->type_name("N")
      ->check(AtLeast(1))
      ->group(kGroup);
  app.add_option("--handshake-timeout-ms", handshake_timeout_ms,
                 "a connection must prove the token within this")
      ->type_name("N")
      ->check(AtLeast(1))
      ->group(kGroup);
  app.add_option("--idle-timeout-ms", idle_timeout_ms,
                 "a connection silent this long is closed (above --heartbeat-ms)")
      ->type_name("N")
      ->check(AtLeast(1))
      ->group(kGroup);
  app.add_option("--max-connections", max_connections, "incoming connections a server holds in all")
      ->type_name("N")
      ->check(AtLeast(1))
      ->group(kGroup);
  app.add_option("--max-connections-per-address", max_connections_per_address,
                 "incoming connections a server holds from one address")
      ->type_name("N")
      ->check(AtLeast(1))
      ->group(kGroup);
}

WireLimits RoleFlags::Limits() const {
  WireLimits limits;
  limits.max_message_bytes = static_cast<size_t>(max_message_mb) << 20;
  limits.handshake_timeout = std::chrono::milliseconds(handshake_timeout_ms);
  limits.idle_timeout = std::chrono::milliseconds(idle_timeout_ms);
  limits.max_connections = max_connections;
  limits.max_connections_per_address = max_connections_per_address;
  return limits;
}

void RoleFlags::Check() const {
  if (peer_timeout_ms <= heartbeat_ms) {
    throw UsageError("--peer-timeout-ms (" + std::to_string(peer_timeout_ms) +
                     ") must be above --heartbeat-ms (" + std::to_string(heartbeat_ms) + ")");
  }
  if (idle_timeout_ms <= heartbeat_ms) {
    throw UsageError("--idle-timeout-ms (" + std::to_string(idle_timeout_ms) +
                     ") must be above --heartbeat-ms (" + std::to_string(heartbeat_ms) + ")");
  }
}

std::vector<std::string> RoleFlags::PserverList() const { return SplitCommas(pservers); }

}  // namespace rill::cli
