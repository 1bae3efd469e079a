// The distributed-job settings every role reads: flags first, then the
// environment (RILL_ROLE, RILL_TRAINER_ID, RILL_TRAINERS, RILL_PSERVERS,
// RILL_SERVER_INDEX, RILL_TOKEN; CLI11 reads a variable when its flag is not
// given), so any process manager can start the processes of a job
// (actors/distributed/distributed.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rill/wire_limits.h"
#include "tools/rill/flags.h"

namespace rill::cli {

struct RoleFlags {
  std::string role;  // trainer | pserver (empty: a local run)
  int trainer_id = -1;
  int trainers = 0;
  std::string pservers;  // HOST:PORT,...
  int server_index = -1;
  std::string token;
  bool async = false;
  int heartbeat_ms = 500;
  int peer_timeout_ms = 5000;
  int connect_timeout_ms = 30000;
  int64_t max_message_mb = 256;
  // Rill's transport's limits (actors/distributed/distributed.md).
  int handshake_timeout_ms = 5000;
  int idle_timeout_ms = 60000;
  int max_connections = 256;
  int max_connections_per_address = 64;

  // Adds --role, --trainer-id, --trainers, --pservers, --server-index, --token,
  // --async, --heartbeat-ms, --peer-timeout-ms, --connect-timeout-ms,
  // --max-message-mb, --handshake-timeout-ms,
  // --idle-timeout-ms, --max-connections, --max-connections-per-address to a
  // command, in a group of their own in its help.
  void Bind(CLI::App& app);
  // --max-message-mb and the transport's limits.
  WireLimits Limits() const;
  // Throws UsageError for what the flags cannot check one by one.
  void Check() const;
  std::vector<std::string> PserverList() const;
};

}  // namespace rill::cli
