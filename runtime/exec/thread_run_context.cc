#include "runtime/exec/thread_run_context.h"

#include "rill/error.h"

namespace rill {

ThreadRunContext::~ThreadRunContext() {
  Fail(std::make_exception_ptr(Error(ErrorCode::kInternal, "the run was abandoned")));
  Join();
}

void ThreadRunContext::Go(std::string what, std::function<void()> body) {
  std::lock_guard<std::mutex> lock(mutex_);
  threads_.emplace_back([this, what = std::move(what), body = std::move(body)] {
    if (std::exception_ptr error = RunGoBody(what, body)) Fail(error);
  });
}

void ThreadRunContext::OnFailure(std::function<void()> closer) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_) {
      closers_.push_back(std::move(closer));
      return;
    }
  }
  closer();
}

void ThreadRunContext::Fail(std::exception_ptr error) {
  std::vector<std::function<void()>> closers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = error;
    failed_ = true;
    closers.swap(closers_);
  }
  for (auto& close : closers) close();
}

std::exception_ptr ThreadRunContext::Join() {
  while (true) {
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (threads_.empty()) break;
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::exception_ptr error = error_;
  error_ = nullptr;
  failed_ = false;
  closers_.clear();
  return error;
}

}  // namespace rill
