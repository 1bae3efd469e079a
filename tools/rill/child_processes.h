// Child processes whose output is streamed line by line with a prefix
// ("[trainer 1] ..."), for `rill launch`: start them, pump their output,
// and stop the rest when one fails.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace rill::cli {

class ChildProcesses {
 public:
  struct Child {
    std::string name;
    pid_t pid = -1;
    int output = -1;      // read end of its stdout + stderr
    std::string partial;  // output after its last newline
    bool running = false;
    int status = 0;  // wait status once it ended
  };

  ~ChildProcesses();
  // Starts `argv` (argv[0] a path) with `env` added to the environment; its
  // output lines are printed as "[name] line". Throws kIo when it cannot.
  void Start(const std::string& name, const std::vector<std::string>& argv,
             const std::map<std::string, std::string>& env = {});
  // Pumps output until every child ended. Once one fails, the others get
  // `grace` to end on their own (a job notices a dead peer), then SIGKILL.
  // Returns the children, with their statuses.
  const std::vector<Child>& Wait(std::chrono::milliseconds grace);
  // Reads the output of every child for up to `timeout` until each child of
  // `names` printed a line containing `text`, in whatever order they print
  // (every line read is printed, none is lost). Returns the names of those that
  // did not: the ones that ended without it (at once, naming only those), or,
  // when time ran out, every one still silent (empty: all did).
  std::vector<std::string> WaitForLines(const std::vector<std::string>& names,
                                        const std::string& text, std::chrono::milliseconds timeout);
  // Sends SIGKILL to every running child.
  void KillAll();

  // "exited with status 1", "killed by signal 9".
  static std::string DescribeStatus(int status);

 private:
  // Reads what is available (waiting up to `timeout`), prints whole lines,
  // reaps children that ended. Returns the lines read, as (child, line).
  std::vector<std::pair<size_t, std::string>> Pump(std::chrono::milliseconds timeout);

  std::vector<Child> children_;
};

}  // namespace rill::cli
