#include "rill/run_context.h"

#include "rill/error.h"

namespace rill {

std::exception_ptr RunGoBody(const std::string& what, const std::function<void()>& body) {
  try {
    body();
    return nullptr;
  } catch (const Error& e) {
    return std::make_exception_ptr(Error(e.code(), StrCat(what, ": ", e.message())));
  } catch (const std::exception& e) {
    return std::make_exception_ptr(Error(ErrorCode::kInternal, StrCat(what, ": ", e.what())));
  } catch (...) {
    return std::make_exception_ptr(
        Error(ErrorCode::kInternal, StrCat(what, ": unknown exception")));
  }
}

}  // namespace rill
