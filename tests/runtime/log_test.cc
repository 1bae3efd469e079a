// The log sink (rill/log.h): messages reach the sink set, null restores the
// default "rill: <message>" lines on standard error, a sink that throws
// loses nothing, and replacing the sink while other threads log is safe.
#include "rill/log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/testing/captured_log.h"

namespace rill {
namespace {

using Captured = testing::CapturedLog;

class LogTest : public ::testing::Test {
 protected:
  void TearDown() override { SetLogSink(nullptr); }
};

TEST_F(LogTest, TheSinkGetsEachMessageWithItsLevel) {
  Captured captured;
  SetLogSink(captured.Sink());
  Log(LogLevel::kWarning, "peer ", 3, " refused: ", "bad token");
  LogMessage(LogLevel::kError, "plain");
  ASSERT_EQ(captured.messages.size(), 2u);
  EXPECT_EQ(captured.messages[0].first, LogLevel::kWarning);
  EXPECT_EQ(captured.messages[0].second, "peer 3 refused: bad token");
  EXPECT_EQ(captured.messages[1].first, LogLevel::kError);
  EXPECT_EQ(captured.messages[1].second, "plain");
}

TEST_F(LogTest, NullRestoresTheDefaultLinesOnStandardError) {
  Captured captured;
  SetLogSink(captured.Sink());
  SetLogSink(nullptr);
  ::testing::internal::CaptureStderr();
  Log(LogLevel::kInfo, "trace written to ", "t.json");
  Log(LogLevel::kWarning, "a report\n");  // one newline, not two
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "rill: trace written to t.json\nrill: a report\n");
  EXPECT_TRUE(captured.messages.empty());
}

TEST_F(LogTest, ASinkThatThrowsLosesNothing) {
  SetLogSink([](LogLevel, const std::string&) { throw std::runtime_error("sink broken"); });
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(Log(LogLevel::kError, "the message"));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("rill: the message"), std::string::npos) << err;
  EXPECT_NE(err.find("sink broken"), std::string::npos) << err;
}

TEST_F(LogTest, ReplacingTheSinkWhileThreadsLogLosesNoMessage) {
  std::atomic<int> first{0}, second{0};
  const LogSink to_first = [&](LogLevel, const std::string&) { ++first; };
  const LogSink to_second = [&](LogLevel, const std::string&) { ++second; };
  SetLogSink(to_first);
  constexpr int kThreads = 4, kEach = 2000;
  std::atomic<bool> done{false};
  std::thread swapper([&] {
    for (int i = 0; !done.load(); ++i) SetLogSink(i % 2 ? to_first : to_second);
  });
  std::vector<std::thread> loggers;
  for (int t = 0; t < kThreads; ++t) {
    loggers.emplace_back([t] {
      for (int i = 0; i < kEach; ++i) Log(LogLevel::kInfo, "thread ", t, " message ", i);
    });
  }
  for (auto& l : loggers) l.join();
  done = true;
  swapper.join();
  EXPECT_EQ(first.load() + second.load(), kThreads * kEach);
}

TEST(LogLevelTest, Names) {
  EXPECT_STREQ(LogLevelName(LogLevel::kInfo), "info");
  EXPECT_STREQ(LogLevelName(LogLevel::kWarning), "warning");
  EXPECT_STREQ(LogLevelName(LogLevel::kError), "error");
}

}  // namespace
}  // namespace rill
