// ThreadRunContext: the reference executor's RunContext. A go block runs on a
// thread of its own; Join() waits for all of them (go blocks may start more)
// and gives the first error. A failure runs the registered closers once, so
// that whatever waits on a channel returns.
#pragma once

#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rill/run_context.h"

namespace rill {

class ThreadRunContext : public RunContext {
 public:
  explicit ThreadRunContext(const proto::ProgramDesc& program) : program_(program) {}
  ~ThreadRunContext() override;
  ThreadRunContext(const ThreadRunContext&) = delete;
  ThreadRunContext& operator=(const ThreadRunContext&) = delete;

  const proto::ProgramDesc& program() const override { return program_; }
  void Go(std::string what, std::function<void()> body) override;
  void OnFailure(std::function<void()> closer) override;

  // Records `error` (the first one wins) and runs the closers.
  void Fail(std::exception_ptr error);
  // Waits for every go block started so far (and those they start); returns
  // the first error and makes the context ready for the next run.
  std::exception_ptr Join();

 private:
  const proto::ProgramDesc& program_;
  std::mutex mutex_;
  std::vector<std::thread> threads_;            // guarded by mutex_
  std::vector<std::function<void()>> closers_;  // guarded by mutex_
  std::exception_ptr error_;                    // guarded by mutex_
  bool failed_ = false;                         // guarded by mutex_
};

}  // namespace rill
