// Messages the library emits reach the log sink (rill/log.h): a parameter
// server's rejected message (its `log` option left unset) and a fiber that
// ended with an exception; with the default restored they go to standard
// error again.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "actors/channels/fiber_pool.h"
#include "actors/distributed/transport.h"
#include "actors/distributed/wire.h"
#include "rill/builder.h"
#include "rill/log.h"
#include "rill/optimizer.h"
#include "rill/pserver.h"
#include "rill/runtime.h"
#include "rill/transpiler.h"
#include "tests/testing/captured_log.h"

namespace rill {
namespace {

using namespace std::chrono_literals;

using Captured = testing::CapturedLog;

class LogSinkTest : public ::testing::Test {
 protected:
  void SetUp() override { SetLogSink(captured_.Sink()); }
  void TearDown() override { SetLogSink(nullptr); }
  Captured captured_;
};

TEST_F(LogSinkTest, AParameterServersRejectedMessageReachesTheSink) {
  Program main, startup;
  Builder b(&main, &startup, 3);
  Var x = b.Data("x", {-1, 4});
  Var loss = b.Mean(b.Fc(x, 2));
  SGD(0.1f).set_placeable(true).Minimize(b, loss);
  TranspileOptions plan_options;
  plan_options.pservers = {"127.0.0.1:1"};
  TranspileResult plan = Transpile(main.desc(), startup.desc(), plan_options);

  auto server_runtime = std::make_shared<Runtime>(1, 1);
  ParameterServerOptions options;  // no `log`: the sink
  ParameterServer server(plan.servers[0].main, plan.servers[0].startup, options, server_runtime);
  // A peer that proves the (empty) token, then pulls before its HELLO.
  std::promise<void> answered;
  TransportCallbacks callbacks;
  callbacks.on_frame = [&answered](ConnectionId, ReceivedFrame frame) {
    if (frame.kind == FrameKind::kMessage) answered.set_value();
  };
  Transport client(TransportOptions{}, callbacks);
  const ConnectionId to =
      client.Connect(ParseEndpoint("127.0.0.1:" + std::to_string(server.port())),
                     Hello{PeerRole::kTrainer, 0, {}}, 5s);
  client.Send(
      to, EncodeMessageFrame(WirePull(plan.servers[0].main.blocks(0).vars(0).name()), Tensor()));
  ASSERT_EQ(answered.get_future().wait_for(5s), std::future_status::ready) << "no answer in 5 s";
  // The server logs before it answers.
  const auto* logged = captured_.Find("rejected a message from");
  ASSERT_NE(logged, nullptr);
  EXPECT_EQ(logged->first, LogLevel::kWarning);
  EXPECT_NE(logged->second.find("parameter server 0"), std::string::npos) << logged->second;
}

TEST_F(LogSinkTest, AFiberThatThrowsIsReportedToTheSinkThenToStandardError) {
  {
    FiberPool pool(FiberPool::Options{.threads = 1});
    pool.Spawn([] { throw std::runtime_error("boom"); });
    pool.Shutdown();  // waits for the fiber
  }
  const auto* logged = captured_.Find("a fiber ended with an exception: boom");
  ASSERT_NE(logged, nullptr);
  EXPECT_EQ(logged->first, LogLevel::kError);

  SetLogSink(nullptr);
  ::testing::internal::CaptureStderr();
  {
    FiberPool pool(FiberPool::Options{.threads = 1});
    pool.Spawn([] { throw std::runtime_error("bang"); });
    pool.Shutdown();
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "rill: a fiber ended with an exception: bang\n");
  EXPECT_EQ(captured_.Find("bang"), nullptr);
}

TEST(FiberPoolCancelTest, SpawnAfterShutdownIsCancelled) {
  FiberPool pool(FiberPool::Options{.threads = 1});
  pool.Shutdown();
  try {
    pool.Spawn([] {});
    ADD_FAILURE() << "a shut-down pool took work";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCancelled) << e.what();
  }
}

}  // namespace
}  // namespace rill
