#include "actors/distributed/transport.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "actors/distributed/transport_connection.h"
#include "rill/error.h"
#include "rill/log.h"

namespace rill {
namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

// Between connection attempts to a server that is not listening yet.
constexpr std::chrono::milliseconds kRetryInterval{50};
// After accept fails (out of file descriptors), before accepting again.
constexpr std::chrono::milliseconds kAcceptRetry{10};

// How one connection attempt ended.
struct Attempt {
  ConnectionId id = 0;
  std::string failure;  // empty: connected
  bool fatal = false;   // retrying will not help
};

}  // namespace

class Transport::Impl : public ConnectionOwner {
 public:
  Impl(TransportOptions options, TransportCallbacks callbacks)
      : options_(std::move(options)),
        callbacks_(std::move(callbacks)),
        work_(asio::make_work_guard(io_)),
        acceptor_(io_),
        accept_retry_(io_),
        thread_([this] { Run(); }) {}

  ~Impl() override {
    asio::post(io_, [this] {
      stopping_ = true;
      error_code ignored;
      acceptor_.close(ignored);
      accept_retry_.cancel();
      std::vector<std::shared_ptr<Connection>> all;
      for (auto& [id, entry] : connections_) all.push_back(entry.connection);
      for (auto& connection : all) connection->Close("the transport was shut down");
    });
    work_.reset();
    thread_.join();
  }

  const TransportOptions& options() const override { return options_; }
  const TransportCallbacks& callbacks() const override { return callbacks_; }
  TransportStats& stats() override { return stats_; }

  void OnOpened(Connection& connection) override {
    auto it = connections_.find(connection.id());
    if (it != connections_.end() && it->second.handshaking) {
      it->second.handshaking = false;
      --per_address_[it->second.ip].handshaking;
      --stats_.handshaking;
    }
    ++stats_.open;
    if (connection.incoming()) {
      Log(LogLevel::kInfo, "transport: ", connection.Describe(), " connected");
    }
    if (callbacks_.on_open) callbacks_.on_open(connection.id(), connection.peer());
  }

  void OnClosed(Connection& connection, const std::string& why) override {
    auto it = connections_.find(connection.id());
    if (it == connections_.end()) return;
    Entry entry = std::move(it->second);
    connections_.erase(it);
    if (connection.incoming()) {
      --incoming_;
      AddressCount& count = per_address_[entry.ip];
      --count.total;
      if (entry.handshaking) {
        --count.handshaking;
        --stats_.handshaking;
      }
      if (count.total == 0) per_address_.erase(entry.ip);
    }
    if (connection.open()) {
      --stats_.open;
      if (callbacks_.on_close) callbacks_.on_close(connection.id(), why);
    } else if (connection.incoming()) {
      Log(LogLevel::kWarning, "transport: ", why);
    }
    // The caller is a member of the connection: let it finish before the last reference goes.
    asio::post(io_, [keep = std::move(entry.connection)] {});
  }

  uint16_t Listen(const Endpoint& endpoint) {
    {
      std::lock_guard<std::mutex> lock(listen_mutex_);
      RILL_CHECK(!listening_, kInvalidArgument, "the transport already listens; cannot listen on ",
                 endpoint.ToString() + " as well");
      listening_ = true;
    }
    error_code error;
    tcp::resolver resolver(io_);
    const auto results = resolver.resolve(endpoint.host, std::to_string(endpoint.port),
                                          tcp::resolver::passive, error);
    if (error || results.empty()) {
      Fail(ErrorCode::kIo, "cannot listen on ", endpoint.ToString(), ": ", error.message());
    }
    const tcp::endpoint local = results.begin()->endpoint();
    // reuse_address: a restarted server binds its port again while the old
    // connections linger in TIME_WAIT (two live listeners are still refused).
    if (!acceptor_.open(local.protocol(), error) &&
        !acceptor_.set_option(tcp::acceptor::reuse_address(true), error) &&
        !acceptor_.bind(local, error) &&
        !acceptor_.listen(asio::socket_base::max_listen_connections, error)) {
      const uint16_t port = acceptor_.local_endpoint(error).port();
      if (!error) {
        asio::post(io_, [this] { Accept(); });
        return port;
      }
    }
    Fail(ErrorCode::kIo, "cannot listen on ", endpoint.ToString(), ": ", error.message());
  }

  ConnectionId Connect(const Endpoint& endpoint, const Hello& hello,
                       std::chrono::milliseconds timeout) {
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + timeout;
    std::string last_failure = "no attempt within the timeout";
    int attempts = 0;
    for (auto left = timeout; left.count() > 0;
         left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())) {
      auto result = std::make_shared<std::promise<Attempt>>();
      std::future<Attempt> future = result->get_future();
      ++attempts;
      asio::post(io_, [this, endpoint, hello, left, result] {
        StartAttempt(endpoint, hello, left, result);
      });
      // Each attempt ends by itself (its connect within `left`, its handshake within
      // handshake_timeout); the wait's bound is a guard against a bug.
      const auto guard = left + options_.limits.handshake_timeout + std::chrono::seconds(5);
      RILL_CHECK(future.wait_for(guard) == std::future_status::ready, kInternal, "connecting to ",
                 endpoint.ToString(), ": an attempt did not end within ", guard.count(), " ms");
      const Attempt attempt = future.get();
      if (attempt.failure.empty()) return attempt.id;
      last_failure = attempt.failure;
      if (attempt.fatal) {
        Fail(ErrorCode::kUnavailable, "cannot connect to ", endpoint.ToString(), ": ",
             attempt.failure);
      }
      std::this_thread::sleep_for(
          std::min<Clock::duration>(kRetryInterval, deadline - Clock::now()));
    }
    Fail(ErrorCode::kUnavailable, "cannot connect to ", endpoint.ToString(), " within ",
         timeout.count(), " ms (", attempts, " attempts; last: ", last_failure, ")");
  }

  // dispatch: from a callback (on the io thread) the frame is queued, and its
  // write started, at once; from another thread it is posted.
  void Send(ConnectionId id, OutgoingFrame frame, std::function<void(bool)> written) {
    asio::dispatch(io_,
                   [this, id, frame = std::move(frame), written = std::move(written)]() mutable {
                     auto it = connections_.find(id);
                     if (it == connections_.end()) {
                       if (written) written(false);
                       return;
                     }
                     std::shared_ptr<Connection> connection = it->second.connection;
                     connection->Send(std::move(frame), std::move(written));
                   });
  }

  void Close(ConnectionId id) {
    asio::dispatch(io_, [this, id] {
      auto it = connections_.find(id);
      if (it == connections_.end()) return;
      std::shared_ptr<Connection> connection = it->second.connection;
      connection->Close(StrCat("closed here: ", connection->Describe()));
    });
  }

 private:
  struct Entry {
    std::shared_ptr<Connection> connection;
    std::string ip;  // incoming: the remote address the caps count
    bool handshaking = false;
  };
  struct AddressCount {
    int total = 0;
    int handshaking = 0;
  };

  void Run() {
    while (true) {
      try {
        io_.run();
        return;
      } catch (const std::exception& error) {
        // A handler that throws (an allocation that failed) must not end the transport.
        Log(LogLevel::kError, "transport: ", error.what());
      }
    }
  }

  void Accept() {
    acceptor_.async_accept([this](const error_code& error, tcp::socket socket) {
      if (stopping_ || error == asio::error::operation_aborted) return;
      if (error) {
        Log(LogLevel::kWarning, "transport: accept failed: ", error.message());
        accept_retry_.expires_after(kAcceptRetry);
        accept_retry_.async_wait([this](const error_code& wait_error) {
          if (!wait_error && !stopping_) Accept();
        });
        return;
      }
      Admit(std::move(socket));
      Accept();
    });
  }

  void Admit(tcp::socket socket) {
    error_code error;
    const tcp::endpoint remote = socket.remote_endpoint(error);
    if (error) return;  // gone already
    const std::string ip = remote.address().to_string();
    AddressCount& count = per_address_[ip];
    if (incoming_ >= options_.limits.max_connections ||
        count.total >= options_.limits.max_connections_per_address ||
        count.handshaking >= options_.limits.max_handshakes_per_address) {
      ++stats_.refused_at_limit;
      if (count.total == 0) per_address_.erase(ip);
      socket.close(error);
      return;
    }
    ++incoming_;
    ++count.total;
    ++count.handshaking;
    ++stats_.handshaking;
    ++stats_.accepted;
    const ConnectionId id = next_id_++;
    auto connection = std::make_shared<Connection>(*this, std::move(socket), id, /*incoming=*/true);
    connections_[id] = Entry{connection, ip, /*handshaking=*/true};
    connection->StartServer();
  }

  void StartAttempt(const Endpoint& endpoint, const Hello& hello, std::chrono::milliseconds left,
                    const std::shared_ptr<std::promise<Attempt>>& result) {
    auto socket = std::make_shared<tcp::socket>(io_);
    auto resolver = std::make_shared<tcp::resolver>(io_);
    auto timer = std::make_shared<asio::steady_timer>(io_, left);
    auto connected = std::make_shared<bool>(false);
    auto ended = std::make_shared<bool>(false);
    auto end = [result, ended](Attempt attempt) {
      if (*ended) return;
      *ended = true;
      result->set_value(std::move(attempt));
    };
    timer->async_wait([=](const error_code& error) {
      if (error || *connected) return;
      resolver->cancel();
      error_code ignored;
      socket->close(ignored);
      end(Attempt{0, StrCat("no connection within ", left.count(), " ms"), false});
    });
    resolver->async_resolve(
        endpoint.host, std::to_string(endpoint.port),
        [=, this](const error_code& error, const tcp::resolver::results_type& results) {
          if (*ended) return;
          if (error)
            return end(
                Attempt{0, StrCat("cannot resolve ", endpoint.host, ": ", error.message()), false});
          asio::async_connect(
              *socket, results, [=, this](const error_code& connect_error, const tcp::endpoint&) {
                if (*ended) return;
                if (connect_error) return end(Attempt{0, connect_error.message(), false});
                *connected = true;
                timer->cancel();
                if (stopping_) return end(Attempt{0, "the transport was shut down", true});
                const ConnectionId id = next_id_++;
                auto connection =
                    std::make_shared<Connection>(*this, std::move(*socket), id, false);
                connections_[id] = Entry{connection, "", false};
                Connection* raw = connection.get();
                connection->StartClient(hello, [=](const std::string& failure) {
                  end(failure.empty() ? Attempt{id, "", false}
                                      : Attempt{0, failure, raw->token_refused()});
                });
              });
        });
  }

  TransportOptions options_;
  TransportCallbacks callbacks_;
  TransportStats stats_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  tcp::acceptor acceptor_;
  asio::steady_timer accept_retry_;
  std::mutex listen_mutex_;
  bool listening_ = false;  // guarded by listen_mutex_
  // The rest is touched on the io thread only.
  bool stopping_ = false;
  ConnectionId next_id_ = 1;
  int incoming_ = 0;
  std::unordered_map<ConnectionId, Entry> connections_;
  std::map<std::string, AddressCount> per_address_;
  std::thread thread_;  // last: starts once everything above is built
};

Transport::Transport(TransportOptions options, TransportCallbacks callbacks)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(callbacks))) {}

Transport::~Transport() = default;

uint16_t Transport::Listen(const Endpoint& endpoint) { return impl_->Listen(endpoint); }

ConnectionId Transport::Connect(const Endpoint& endpoint, const Hello& hello,
                                std::chrono::milliseconds timeout) {
  return impl_->Connect(endpoint, hello, timeout);
}

void Transport::Send(ConnectionId connection, OutgoingFrame frame,
                     std::function<void(bool written)> written) {
  impl_->Send(connection, std::move(frame), std::move(written));
}

void Transport::Close(ConnectionId connection) { impl_->Close(connection); }

const TransportStats& Transport::stats() const { return impl_->stats(); }

}  // namespace rill
