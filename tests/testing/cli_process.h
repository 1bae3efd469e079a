// A `rill` command run as a child process by the tests that drive whole jobs
// (distributed_test, collective_launch_test): its stdout and stderr go to a
// log file the test reads while it runs.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rill::testing {

struct CliProcess {
  pid_t pid = -1;
  std::string log;
  int status = -1;  // exit status, 128 + signal, or -1 while running

  std::string Output() const;
  // Waits up to `timeout` for the process to end; false if it still runs.
  bool Wait(std::chrono::milliseconds timeout);
  // Waits until its output contains `text` (false after `timeout` or if it ended).
  bool WaitForOutput(const std::string& text, std::chrono::milliseconds timeout);
  // SIGKILL, then waits for it (a process that ended is left alone).
  void Kill();
};

// Starts `cli` with `args` (and `env` added to the environment), writing its
// output to `log`.
std::unique_ptr<CliProcess> StartCliProcess(const std::string& cli, const std::string& log,
                                            const std::vector<std::string>& args,
                                            const std::map<std::string, std::string>& env = {});

}  // namespace rill::testing
