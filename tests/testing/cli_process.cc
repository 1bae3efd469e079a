#include "tests/testing/cli_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace rill::testing {

using Clock = std::chrono::steady_clock;

std::string CliProcess::Output() const {
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool CliProcess::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (status < 0) {
    int raw = 0;
    if (waitpid(pid, &raw, WNOHANG) == pid) {
      status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
      break;
    }
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

bool CliProcess::WaitForOutput(const std::string& text, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (Output().find(text) != std::string::npos) return true;
    if (Wait(std::chrono::milliseconds(0))) return Output().find(text) != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

void CliProcess::Kill() {
  if (status < 0) {
    kill(pid, SIGKILL);
    Wait(std::chrono::seconds(10));
  }
}

std::unique_ptr<CliProcess> StartCliProcess(const std::string& cli, const std::string& log,
                                            const std::vector<std::string>& args,
                                            const std::map<std::string, std::string>& env) {
  auto process = std::make_unique<CliProcess>();
  process->log = log;
  std::vector<std::string> argv = {cli};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (auto& arg : argv) raw.push_back(arg.data());
  raw.push_back(nullptr);
  process->pid = fork();
  if (process->pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    for (const auto& [key, value] : env) setenv(key.c_str(), value.c_str(), 1);
    execv(raw[0], raw.data());
    _exit(127);
  }
  return process;
}

}  // namespace rill::testing
