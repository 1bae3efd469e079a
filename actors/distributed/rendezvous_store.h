// RendezvousStore: the key/value store through which the ranks of a process
// group find each other (process_group.h), and the store Gloo's rendezvous
// asks (gloo::rendezvous::Store). Rank 0 holds the table and listens on
// Rill's transport (transport.h: every connection proves the job's token
// before a frame is read, frames are held to the limits before anything is
// allocated); the other ranks connect as PeerRole::kRank and speak
// STORE_SET / STORE_GET / STORE_VALUE frames (proto/wire.proto), each checked
// with CheckFramedWire. A GET is answered once its key is set.
//
// Every wait ends: at its deadline (kTimeout, naming the keys still missing)
// or at once when the connection to rank 0 closes (kUnavailable, naming rank 0
// and the cause). Rank 0 notices a rank whose connection closes before it said
// goodbye (Leave) and tells every rank through the key kLostKey (Lost).
// Both ends send a heartbeat every Options::heartbeat; a connection on which
// nothing arrives for Options::peer_timeout is closed, so a rank that stops
// (SIGSTOP, a hung host, a cut cable) is lost like one that died: rank 0
// names it in kLostKey, and rank 0 gone silent fails the others' waits.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gloo/rendezvous/store.h"
#include "rill/endpoint.h"

namespace rill {

class RendezvousStore : public gloo::rendezvous::Store {
 public:
  struct Options {
    int rank = 0;
    int world_size = 1;
    Endpoint master;  // rank 0 listens here (port 0: any free port), the others connect
    std::string token;
    // Connecting, and every wait that names no timeout of its own.
    std::chrono::milliseconds timeout{10000};
    // Heartbeats, and the silence after which a peer counts as gone (above
    // the heartbeat).
    std::chrono::milliseconds heartbeat{1000};
    std::chrono::milliseconds peer_timeout{5000};
  };

  // The key rank 0 sets when ranks leave without a goodbye: a line per rank.
  static constexpr const char* kLostKey = "rill/lost";

  // Rank 0: listens (throws kIo when it cannot bind). Another rank: connects,
  // retrying until the timeout (kUnavailable naming rank 0's endpoint; at
  // once when the tokens differ).
  explicit RendezvousStore(const Options& options);
  ~RendezvousStore() override;
  RendezvousStore(const RendezvousStore&) = delete;
  RendezvousStore& operator=(const RendezvousStore&) = delete;

  // Rank 0: the port it listens on.
  uint16_t port() const;

  // Sets `key`. On rank 0 at once; elsewhere the frame is queued to rank 0.
  void Set(const std::string& key, const std::string& value);
  // The values of `keys`, waiting until every one is set or `timeout` passes.
  // Throws kTimeout naming the missing keys (each through `describe`, by
  // default `key "K"`), kUnavailable when rank 0 is gone or, with
  // `fail_on_lost`, as soon as a rank left without a goodbye (naming it).
  std::vector<std::string> Get(const std::vector<std::string>& keys,
                               std::chrono::milliseconds timeout,
                               const std::function<std::string(const std::string&)>& describe = {},
                               bool fail_on_lost = false);
  // What rank 0 knows of ranks that left without a goodbye, waiting up to
  // `timeout` for news; "" when none. Failing that, on a rank whose
  // connection to rank 0 closed: that rank 0 is gone.
  std::string Lost(std::chrono::milliseconds timeout);
  // This rank is done: a rank says goodbye (its connection closing is then no
  // loss), waiting up to `timeout` until the goodbye, and so all it set
  // before, is written; rank 0 waits up to `timeout` until every rank has said
  // goodbye or closed. Never throws.
  void Leave(std::chrono::milliseconds timeout);

  // Rank 0: tells every connected rank why the group ends (their waits fail
  // at once with `why`), waiting up to a second for the words to leave.
  void Abort(const std::string& why);

  // gloo::rendezvous::Store, over the same table; the waits without a timeout
  // use Options::timeout.
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rill
