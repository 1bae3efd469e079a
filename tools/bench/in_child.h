// Runs a measurement in a forked child process and returns what it measured:
// every measurement starts from the same heap, none inherits another's
// threads, caches or freed memory, and the child's peak RSS is its own.
// The parent must not have started threads that the child would need (fork
// copies only the calling thread): build executors inside the measurement.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <type_traits>

#include "rill/error.h"

namespace rill::bench {

// Peak resident memory of this process so far, in MiB.
inline double PeakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// `measure` returns a trivially copyable result, sent back through a pipe.
template <class F>
auto InChild(F measure) -> decltype(measure()) {
  using Result = decltype(measure());
  static_assert(std::is_trivially_copyable_v<Result>, "results travel as bytes");
  int fds[2];
  RILL_CHECK(pipe(fds) == 0, kIo, "pipe failed");
  const pid_t pid = fork();
  RILL_CHECK(pid >= 0, kIo, "fork failed");
  if (pid == 0) {
    close(fds[0]);
    Result result{};
    int status = 0;
    try {
      result = measure();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "benchmark child: %s\n", e.what());
      status = 1;
    }
    const ssize_t written = write(fds[1], &result, sizeof(result));
    _exit(status != 0 || written != static_cast<ssize_t>(sizeof(result)) ? 1 : 0);
  }
  close(fds[1]);
  Result result{};
  const ssize_t got = read(fds[0], &result, sizeof(result));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  RILL_CHECK(
      got == static_cast<ssize_t>(sizeof(result)) && WIFEXITED(status) && WEXITSTATUS(status) == 0,
      kInternal, "a benchmark child process failed");
  return result;
}

}  // namespace rill::bench
