#include "rill/error.h"

namespace rill {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kOutOfRange: return "out of range";
    case ErrorCode::kParse: return "parse error";
    case ErrorCode::kUnimplemented: return "unimplemented";
    case ErrorCode::kInternal: return "internal error";
    case ErrorCode::kIo: return "i/o error";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kCancelled: return "cancelled";
  }
  return "error";
}

Error AsError(std::exception_ptr error) {
  // An exception_ptr can be looked into only by rethrowing it.
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return e;
  } catch (const std::exception& e) {
    return Error(ErrorCode::kInternal, e.what());
  } catch (...) {
    return Error(ErrorCode::kInternal, "unknown exception");
  }
}

}  // namespace rill
