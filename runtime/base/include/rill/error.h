// Errors raised by Rill. Every failure is an rill::Error carrying a code and a
// message that names the place it happened (block, op, variable, file).
// A failed run throws; the process and the scope stay usable.
#pragma once

#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace rill {

enum class ErrorCode {
  kInvalidArgument,  // the caller passed something malformed (program, attr, shape)
  kNotFound,         // a named thing (variable, op type, file) does not exist
  kOutOfRange,       // an index or value is outside what is allowed
  kParse,            // a file or text could not be parsed
  kUnimplemented,    // valid input that this build cannot run
  kInternal,         // a broken invariant inside Rill
  kIo,               // reading or writing a file failed
  kTimeout,          // something expected did not happen in time (a stalled iteration, a dead peer)
  kUnavailable,      // a peer could not be reached, refused us, or was lost
  kCancelled,        // work cut short by a shutdown (an executor or pool destroyed while it ran)
};

const char* ErrorCodeName(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message)
      : std::runtime_error(std::string(ErrorCodeName(code)) + ": " + message),
        code_(code),
        message_(message) {}
  ErrorCode code() const { return code_; }
  // The message without the code prefix.
  const std::string& message() const { return message_; }

 private:
  ErrorCode code_;
  std::string message_;
};

// Concatenates anything printable with operator<< into one string.
template <class... Args>
std::string StrCat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

template <class... Args>
[[noreturn]] void Fail(ErrorCode code, Args&&... args) {
  throw Error(code, StrCat(std::forward<Args>(args)...));
}

// What `error` (not null) holds, as a rill::Error: itself when it is one,
// kInternal with its what() for another exception, kInternal "unknown
// exception" for anything else.
Error AsError(std::exception_ptr error);

}  // namespace rill

// Checks a condition on input; on failure throws rill::Error(code, message parts...).
#define RILL_CHECK(cond, code, ...)                                  \
  do {                                                               \
    if (!(cond)) ::rill::Fail(::rill::ErrorCode::code, __VA_ARGS__); \
  } while (0)
