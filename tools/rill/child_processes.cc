#include "tools/rill/child_processes.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "rill/error.h"

namespace rill::cli {

ChildProcesses::~ChildProcesses() {
  KillAll();
  for (Child& child : children_) {
    if (child.running) waitpid(child.pid, &child.status, 0);
    if (child.output >= 0) close(child.output);
  }
}

void ChildProcesses::Start(const std::string& name, const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& env) {
  int pipe_fds[2];
  RILL_CHECK(pipe(pipe_fds) == 0, kIo, "cannot start ", name, ": pipe: ", std::strerror(errno));
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    for (const auto& [key, value] : env) setenv(key.c_str(), value.c_str(), 1);
    execv(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(pipe_fds[1]);
  if (pid < 0) {
    close(pipe_fds[0]);
    Fail(ErrorCode::kIo, "cannot start ", name, ": fork: ", std::strerror(errno));
  }
  fcntl(pipe_fds[0], F_SETFL, fcntl(pipe_fds[0], F_GETFL) | O_NONBLOCK);
  Child child;
  child.name = name;
  child.pid = pid;
  child.output = pipe_fds[0];
  child.running = true;
  children_.push_back(std::move(child));
}

std::vector<std::pair<size_t, std::string>> ChildProcesses::Pump(
    std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  std::vector<size_t> owners;
  for (size_t i = 0; i < children_.size(); ++i) {
    if (children_[i].output < 0) continue;
    fds.push_back({children_[i].output, POLLIN, 0});
    owners.push_back(i);
  }
  std::vector<std::pair<size_t, std::string>> lines;
  if (!fds.empty()) poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  for (size_t k = 0; k < fds.size(); ++k) {
    if (fds[k].revents == 0) continue;
    Child& child = children_[owners[k]];
    char buffer[4096];
    ssize_t n;
    while ((n = read(child.output, buffer, sizeof buffer)) > 0) {
      child.partial.append(buffer, static_cast<size_t>(n));
    }
    size_t newline;
    while ((newline = child.partial.find('\n')) != std::string::npos) {
      lines.emplace_back(owners[k], child.partial.substr(0, newline));
      child.partial.erase(0, newline + 1);
    }
    if (n == 0) {  // end of its output
      if (!child.partial.empty()) lines.emplace_back(owners[k], child.partial);
      child.partial.clear();
      close(child.output);
      child.output = -1;
    }
  }
  for (const auto& [owner, line] : lines) {
    std::printf("[%s] %s\n", children_[owner].name.c_str(), line.c_str());
  }
  std::fflush(stdout);
  for (Child& child : children_) {
    if (child.running && child.output < 0 && waitpid(child.pid, &child.status, 0) == child.pid) {
      child.running = false;
    }
  }
  return lines;
}

std::vector<std::string> ChildProcesses::WaitForLines(const std::vector<std::string>& names,
                                                      const std::string& text,
                                                      std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::set<size_t> waiting;
  for (const std::string& name : names) {
    size_t index = 0;
    while (index < children_.size() && children_[index].name != name) ++index;
    RILL_CHECK(index < children_.size(), kInternal, "no child named ", name);
    waiting.insert(index);
  }
  bool ended = false;  // a child we wait for ended without the line: it never will print it
  while (!waiting.empty() && !ended) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    for (const auto& [owner, line] : Pump(std::min(left, std::chrono::milliseconds(100)))) {
      if (line.find(text) != std::string::npos) waiting.erase(owner);
    }
    for (size_t index : waiting) ended = ended || !children_[index].running;
  }
  // Once a child ended without the line, the ones still running are not named:
  // they may yet print it (a shell that has not run its echo yet).
  std::vector<std::string> missing;
  for (size_t index : waiting) {
    if (!ended || !children_[index].running) missing.push_back(children_[index].name);
  }
  return missing;
}

const std::vector<ChildProcesses::Child>& ChildProcesses::Wait(std::chrono::milliseconds grace) {
  std::chrono::steady_clock::time_point kill_at = std::chrono::steady_clock::time_point::max();
  for (;;) {
    bool any = false;
    for (const Child& child : children_) any = any || child.running;
    if (!any) break;
    Pump(std::chrono::milliseconds(100));
    bool failed = false;
    for (const Child& child : children_) {
      failed = failed || (!child.running && child.status != 0);
    }
    const auto now = std::chrono::steady_clock::now();
    if (failed && kill_at == std::chrono::steady_clock::time_point::max()) kill_at = now + grace;
    if (now >= kill_at) KillAll();
  }
  return children_;
}

void ChildProcesses::KillAll() {
  for (Child& child : children_) {
    if (child.running) kill(child.pid, SIGKILL);
  }
}

std::string ChildProcesses::DescribeStatus(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "ended (status " + std::to_string(status) + ")";
}

}  // namespace rill::cli
