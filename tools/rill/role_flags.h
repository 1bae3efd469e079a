// The distributed-job settings every role reads: flags first, then the
// environment (RILL_ROLE, RILL_TRAINER_ID, RILL_TRAINERS, RILL_PSERVERS,
// RILL_SERVER_INDEX, RILL_TOKEN), so any process manager can start the
// processes of a job (actors/distributed/distributed.md).
#pragma once

#include <string>
#include <vector>

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

  // Binds --role, --trainer-id, --trainers, --pservers, --server-index, --token,
  // --async, --heartbeat-ms, --peer-timeout-ms, --connect-timeout-ms, --max-message-mb.
  void Bind(Flags& flags);
  // Fills what the flags left unset from the environment. Returns an error
  // message for a malformed value (empty when fine).
  std::string FromEnvironment();
  std::vector<std::string> PserverList() const;
};

// The usage lines of the flags above.
extern const char* const kRoleFlagsUsage;

}  // namespace rill::cli
