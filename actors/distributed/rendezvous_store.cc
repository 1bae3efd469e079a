#include "actors/distributed/rendezvous_store.h"

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "actors/distributed/transport.h"
#include "actors/distributed/wire.h"
#include "rill/error.h"
#include "rill/log.h"

namespace rill {

using proto::WireMessage;
using Clock = std::chrono::steady_clock;

class RendezvousStore::Impl {
 public:
  explicit Impl(const Options& options) : options_(options) {
    RILL_CHECK(options.world_size >= 1 && options.rank >= 0 && options.rank < options.world_size,
               kInvalidArgument, "rank ", options.rank, " is not in a group of ",
               options.world_size);
    RILL_CHECK(options.heartbeat.count() > 0 && options.peer_timeout > options.heartbeat,
               kInvalidArgument, "rank ", options.rank, ": the peer timeout (",
               options.peer_timeout.count(), " ms) must be above the heartbeat period (",
               options.heartbeat.count(), " ms)");
    TransportOptions transport;
    transport.token = options.token;
    transport.limits.idle_timeout = options.peer_timeout;
    TransportCallbacks callbacks;
    callbacks.on_open = [this](ConnectionId c, const PeerInfo& peer) { OnOpen(c, peer); };
    callbacks.on_frame = [this](ConnectionId c, ReceivedFrame f) { OnFrame(c, std::move(f)); };
    callbacks.on_close = [this](ConnectionId c, const std::string& why) { OnClose(c, why); };
    transport_ = std::make_unique<Transport>(transport, std::move(callbacks));
    if (server()) {
      port_ = transport_->Listen(options.master);
    } else {
      Hello hello{PeerRole::kRank, options.rank, {}};
      try {
        to_master_ = transport_->Connect(options.master, hello, options.timeout);
      } catch (...) {
        StopUsingTransport();  // the members go now: no callback may reach the transport
        throw;
      }
    }
    heartbeat_ = std::thread([this] { Heartbeats(); });
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    heartbeat_.join();
    StopUsingTransport();
    transport_.reset();  // joins the transport's thread: no callback runs after this
  }

  bool server() const { return options_.rank == 0; }
  // Rank 0's store as messages name it: on rank 0, with the port it bound
  // (the master endpoint may say port 0).
  std::string StoreAddress() const {
    return server() ? Endpoint{options_.master.host, port_}.ToString() : options_.master.ToString();
  }
  uint16_t port() const { return port_; }
  const Options& options() const { return options_; }

  void Set(const std::string& key, const std::string& value) {
    if (!server()) {
      SendFrame(to_master_, EncodeMessageFrame(WireStoreSet(key, value), Tensor()));
      return;
    }
    std::vector<ConnectionId> waiting;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      values_[key] = value;
      auto range = remote_gets_.equal_range(key);
      for (auto it = range.first; it != range.second; ++it) waiting.push_back(it->second);
      remote_gets_.erase(range.first, range.second);
    }
    changed_.notify_all();
    for (ConnectionId c : waiting) {
      SendFrame(c, EncodeMessageFrame(WireStoreValue(key, value), Tensor()));
    }
  }

  std::vector<std::string> Get(const std::vector<std::string>& keys,
                               std::chrono::milliseconds timeout,
                               const std::function<std::string(const std::string&)>& describe,
                               bool fail_on_lost) {
    const auto deadline = Clock::now() + timeout;
    if (!server()) {
      std::vector<std::string> ask = keys;
      if (fail_on_lost) ask.push_back(kLostKey);
      Request(ask);
    }
    std::unique_lock<std::mutex> lock(mutex_);
    auto all_there = [&] {
      for (const auto& key : keys) {
        if (values_.count(key) == 0) return false;
      }
      return true;
    };
    auto lost = [&] { return fail_on_lost && values_.count(kLostKey) > 0; };
    changed_.wait_until(lock, deadline,
                        [&] { return all_there() || !master_gone_.empty() || lost(); });
    if (all_there()) {
      std::vector<std::string> values;
      for (const auto& key : keys) values.push_back(values_.at(key));
      return values;
    }
    if (!master_gone_.empty()) {
      Fail(ErrorCode::kUnavailable, "rank ", options_.rank, ": ", master_gone_);
    }
    if (lost()) {
      Fail(ErrorCode::kUnavailable, "rank ", options_.rank, " of ", options_.world_size, ": ",
           values_.at(kLostKey));
    }
    // A thousand-rank job names the first few.
    constexpr int kNamed = 16;
    std::string missing;
    int count = 0;
    for (const auto& key : keys) {
      if (values_.count(key) > 0) continue;
      if (++count > kNamed) continue;
      if (!missing.empty()) missing += ", ";
      missing += describe ? describe(key) : StrCat("key \"", key, "\"");
    }
    if (count > kNamed) missing += StrCat(" and ", count - kNamed, " more");
    Fail(ErrorCode::kTimeout, "rank ", options_.rank, " of ", options_.world_size,
         ": the rendezvous store at ", StoreAddress(), " did not have ", missing, " within ",
         timeout.count(), " ms");
  }

  void Abort(const std::string& why) {
    if (!server()) return;
    std::vector<ConnectionId> to;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& [c, rank] : ranks_) to.push_back(c);
    }
    auto left = std::make_shared<std::atomic<size_t>>(to.size());
    for (ConnectionId c : to) {
      SendFrame(c, EncodeMessageFrame(WireError(why), Tensor()), [this, left](bool) {
        left->fetch_sub(1);
        changed_.notify_all();
      });
    }
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, std::chrono::seconds(1), [&] { return left->load() == 0; });
  }

  // One wait on both ends (rank 0's table, or what rank 0 sent and whether it
  // is gone): a watcher polls this, so no exception on the way.
  std::string Lost(std::chrono::milliseconds timeout) {
    if (!server()) Request({kLostKey});  // asked once; rank 0 answers when it is set
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, timeout,
                      [&] { return values_.count(kLostKey) > 0 || !master_gone_.empty(); });
    auto it = values_.find(kLostKey);
    if (it != values_.end()) return it->second;
    return master_gone_;  // "" on rank 0, and while rank 0 answers
  }

  void Leave(std::chrono::milliseconds timeout) {
    if (!server()) {
      // Until the goodbye is written (or cannot be): the frames queued before
      // it are written then too, and a store destroyed next drops nothing.
      auto written = std::make_shared<bool>(false);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!master_gone_.empty()) return;
      }
      SendFrame(to_master_, EncodeMessageFrame(WireBye(options_.rank), Tensor()),
                [this, written](bool) {
                  {
                    std::lock_guard<std::mutex> lock(mutex_);
                    *written = true;
                  }
                  changed_.notify_all();
                });
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait_for(lock, timeout, [&] { return *written || !master_gone_.empty(); });
      return;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, timeout,
                      [&] { return static_cast<int>(left_.size()) == options_.world_size - 1; });
  }

 private:
  // Every use of the transport after the constructor goes through these:
  // once the store is going, callbacks still running on the transport's
  // thread must not reach it (its destructor clears its own pointer first).
  void SendFrame(ConnectionId c, OutgoingFrame frame, std::function<void(bool)> written = {}) {
    std::lock_guard<std::recursive_mutex> lock(transport_mutex_);
    if (!transport_closing_) transport_->Send(c, std::move(frame), std::move(written));
  }
  void CloseConnection(ConnectionId c) {
    std::lock_guard<std::recursive_mutex> lock(transport_mutex_);
    if (!transport_closing_) transport_->Close(c);
  }
  void StopUsingTransport() {
    std::lock_guard<std::recursive_mutex> lock(transport_mutex_);
    transport_closing_ = true;
  }

  // Asks rank 0 for the keys not yet here nor asked for.
  void Request(const std::vector<std::string>& keys) {
    std::vector<std::string> ask;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& key : keys) {
        if (values_.count(key) == 0 && asked_.insert(key).second) ask.push_back(key);
      }
    }
    for (const auto& key : ask) {
      SendFrame(to_master_, EncodeMessageFrame(WireStoreGet(key), Tensor()));
    }
  }

  std::string Peer(ConnectionId c) const {
    if (!server()) return StrCat("rank 0's rendezvous store at ", options_.master.ToString());
    auto it = ranks_.find(c);
    return it == ranks_.end() ? StrCat("connection ", c) : StrCat("rank ", it->second);
  }

  void OnOpen(ConnectionId c, const PeerInfo& peer) {
    if (!server()) return;
    const int rank = peer.hello.id;
    std::string refused;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (peer.hello.role != PeerRole::kRank) {
        refused = "it is not a rank of a process group";
      } else if (rank <= 0 || rank >= options_.world_size) {
        refused = StrCat("its rank ", rank, " is not in 1..", options_.world_size - 1);
      } else if (seen_.count(rank) > 0) {
        refused = StrCat("rank ", rank, " has already joined");
      } else {
        ranks_[c] = rank;
        seen_.insert(rank);
      }
    }
    if (refused.empty()) return;
    Log(LogLevel::kWarning, "rendezvous store at ", StoreAddress(), ": refused ", peer.address,
        ": ", refused);
    SendFrame(c, EncodeMessageFrame(WireError(refused), Tensor()));
    CloseConnection(c);
  }

  void OnFrame(ConnectionId c, ReceivedFrame frame) {
    if (frame.kind == FrameKind::kHeartbeat) return;
    const WireMessage& m = frame.message;
    std::string peer;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      peer = Peer(c);
    }
    try {
      CheckFramedWire(m, frame.payload, peer);
      if (server()) {
        bool joined = false;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          joined = ranks_.count(c) > 0;
        }
        // A refused connection's frames, until its close: ignored.
        if (!joined) return;
        return ServerFrame(c, m, peer);
      }
      if (m.kind() == WireMessage::STORE_VALUE) {
        {
          std::lock_guard<std::mutex> lock(mutex_);
          values_[m.var()] = m.store_value();
        }
        changed_.notify_all();
        return;
      }
      if (m.kind() == WireMessage::ERROR) {
        MasterGone(StrCat(peer, " reports: ", m.error()));
        return CloseConnection(c);
      }
      Fail(ErrorCode::kInvalidArgument, peer, " sent a ", WireKindName(m.kind()),
           ", which a rank does not take");
    } catch (const Error& error) {
      Log(LogLevel::kWarning, "rank ", options_.rank, ": closing the connection to ", peer, ": ",
          error.message());
      if (!server()) MasterGone(StrCat(peer, " sent a bad frame: ", error.message()));
      CloseConnection(c);
    }
  }

  void ServerFrame(ConnectionId c, const WireMessage& m, const std::string& peer) {
    switch (m.kind()) {
      case WireMessage::STORE_SET: return Set(m.var(), m.store_value());
      case WireMessage::STORE_GET: {
        std::string value;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          auto it = values_.find(m.var());
          if (it == values_.end()) {
            remote_gets_.emplace(m.var(), c);
            return;
          }
          value = it->second;
        }
        return SendFrame(c, EncodeMessageFrame(WireStoreValue(m.var(), value), Tensor()));
      }
      case WireMessage::BYE: {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = ranks_.find(c);
        RILL_CHECK(it != ranks_.end() && it->second == m.trainer_id(), kInvalidArgument, peer,
                   " said goodbye as rank ", m.trainer_id());
        left_.insert(it->second);
        break;
      }
      default:
        Fail(ErrorCode::kInvalidArgument, peer, " sent a ", WireKindName(m.kind()),
             ", which the rendezvous store does not take");
    }
    changed_.notify_all();
  }

  void OnClose(ConnectionId c, const std::string& why) {
    if (!server()) return MasterGone(StrCat("lost the connection to ", Peer(c), ": ", why));
    std::string lost;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = ranks_.find(c);
      for (auto g = remote_gets_.begin(); g != remote_gets_.end();) {
        g = g->second == c ? remote_gets_.erase(g) : std::next(g);
      }
      if (it == ranks_.end()) return;
      const int rank = it->second;
      ranks_.erase(it);
      if (left_.insert(rank).second) {
        lost_ += StrCat(lost_.empty() ? "" : "; ", "rank ", rank, " left the group (", why, ")");
        lost = lost_;
      }
    }
    changed_.notify_all();
    if (!lost.empty()) Set(kLostKey, lost);
  }

  void MasterGone(const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (master_gone_.empty()) master_gone_ = why;
    }
    changed_.notify_all();
  }

  void Heartbeats() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!changed_.wait_for(lock, options_.heartbeat, [&] { return stopping_; })) {
      std::vector<ConnectionId> to;
      if (server()) {
        for (const auto& [c, rank] : ranks_) to.push_back(c);
      } else if (master_gone_.empty()) {
        to.push_back(to_master_);
      }
      lock.unlock();
      for (ConnectionId c : to) SendFrame(c, EncodeHeartbeatFrame());
      lock.lock();
    }
  }

  const Options options_;
  uint16_t port_ = 0;
  ConnectionId to_master_ = 0;

  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  std::map<std::string, std::string> values_;  // rank 0: the table; others: what came
  std::set<std::string> asked_;                // others: keys asked of rank 0
  std::string master_gone_;                    // others: why rank 0 can no longer answer
  // Rank 0: who is at each connection, GETs waiting for their key, the ranks
  // that joined, that left (goodbye or closed), and the lost ones' story.
  std::map<ConnectionId, int> ranks_;
  std::multimap<std::string, ConnectionId> remote_gets_;
  std::set<int> seen_;
  std::set<int> left_;
  std::string lost_;

  // Held while the transport is used (SendFrame, CloseConnection); recursive:
  // from a callback, Close runs inline and may call back into OnClose.
  std::recursive_mutex transport_mutex_;
  bool transport_closing_ = false;

  // Last: destroyed first (when the constructor throws), while what the
  // callbacks touch still lives.
  std::unique_ptr<Transport> transport_;
  std::thread heartbeat_;
};

RendezvousStore::RendezvousStore(const Options& options) : impl_(std::make_unique<Impl>(options)) {}

RendezvousStore::~RendezvousStore() = default;

uint16_t RendezvousStore::port() const { return impl_->port(); }

void RendezvousStore::Set(const std::string& key, const std::string& value) {
  impl_->Set(key, value);
}

std::vector<std::string> RendezvousStore::Get(
    const std::vector<std::string>& keys, std::chrono::milliseconds timeout,
    const std::function<std::string(const std::string&)>& describe, bool fail_on_lost) {
  return impl_->Get(keys, timeout, describe, fail_on_lost);
}

std::string RendezvousStore::Lost(std::chrono::milliseconds timeout) {
  return impl_->Lost(timeout);
}

void RendezvousStore::Leave(std::chrono::milliseconds timeout) {
  try {
    impl_->Leave(timeout);
  } catch (const std::exception& error) {
    Log(LogLevel::kWarning, "rank ", impl_->options().rank, ": leaving the group: ", error.what());
  }
}

void RendezvousStore::Abort(const std::string& why) { impl_->Abort(why); }

void RendezvousStore::set(const std::string& key, const std::vector<char>& data) {
  impl_->Set(key, std::string(data.begin(), data.end()));
}

std::vector<char> RendezvousStore::get(const std::string& key) {
  const std::string value = impl_->Get({key}, impl_->options().timeout, {}, false).front();
  return std::vector<char>(value.begin(), value.end());
}

void RendezvousStore::wait(const std::vector<std::string>& keys) {
  impl_->Get(keys, impl_->options().timeout, {}, false);
}

void RendezvousStore::wait(const std::vector<std::string>& keys,
                           const std::chrono::milliseconds& timeout) {
  impl_->Get(keys, timeout, {}, false);
}

}  // namespace rill
