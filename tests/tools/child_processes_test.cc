// Tests of rill launch's child processes (tools/rill/child_processes.h):
// waiting for a line from several children finds every child's line whatever
// the order they print in, and says which children never printed it.
#include "tools/rill/child_processes.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace rill::cli {
namespace {

using namespace std::chrono_literals;

class ChildProcessesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("child_processes_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static std::vector<std::string> Shell(const std::string& script) {
    return {"/bin/sh", "-c", script};
  }

  std::filesystem::path dir_;
};

// "pserver 1" prints its line, and only then (the file it creates says so)
// "pserver 0" prints its own: waiting for both, in the order launch names
// them, must not drop pserver 1's line while it waits for pserver 0's.
TEST_F(ChildProcessesTest, WaitsForEveryChildsLineInWhateverOrderTheyPrint) {
  const std::string flag = (dir_ / "pserver1_listening").string();
  ChildProcesses children;
  children.Start("pserver 0", Shell("while [ ! -e '" + flag +
                                    "' ]; do sleep 0.01; done; echo 'pserver listening on :1'"));
  children.Start("pserver 1",
                 Shell("echo 'pserver listening on :2'; touch '" + flag + "'; sleep 0.5"));
  EXPECT_EQ(children.WaitForLines({"pserver 0", "pserver 1"}, "listening on", 60s),
            std::vector<std::string>{});
  for (const auto& child : children.Wait(0ms)) EXPECT_EQ(child.status, 0) << child.name;
}

// A child that ends without the line is reported at once (waiting out the
// timeout would outlast CTest's), and only it, whichever child's output is read
// first; a child still silent when the time is up is reported too.
TEST_F(ChildProcessesTest, NamesTheChildrenThatDidNotPrintTheLine) {
  ChildProcesses ended;
  ended.Start("pserver 0", Shell("echo 'pserver listening on :1'"));
  ended.Start("pserver 1", Shell("echo 'cannot bind'; exit 1"));
  EXPECT_EQ(ended.WaitForLines({"pserver 0", "pserver 1"}, "listening on", 600s),
            std::vector<std::string>{"pserver 1"});

  // One that has not printed yet when another fails is not named: it may yet.
  ChildProcesses slow;
  slow.Start("pserver 0", Shell("sleep 0.5; echo 'pserver listening on :1'"));
  slow.Start("pserver 1", Shell("echo 'cannot bind'; exit 1"));
  EXPECT_EQ(slow.WaitForLines({"pserver 0", "pserver 1"}, "listening on", 600s),
            std::vector<std::string>{"pserver 1"});
  slow.KillAll();

  ChildProcesses silent;
  silent.Start("pserver 0", Shell("sleep 30"));
  EXPECT_EQ(silent.WaitForLines({"pserver 0"}, "listening on", 200ms),
            std::vector<std::string>{"pserver 0"});
  silent.KillAll();
}

}  // namespace
}  // namespace rill::cli
