// Error codes: each has its own name, which prefixes what() but not message().
#include "rill/error.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace rill {
namespace {

TEST(ErrorTest, EveryCodeHasItsOwnName) {
  const ErrorCode codes[] = {ErrorCode::kInvalidArgument,
                             ErrorCode::kNotFound,
                             ErrorCode::kOutOfRange,
                             ErrorCode::kParse,
                             ErrorCode::kUnimplemented,
                             ErrorCode::kInternal,
                             ErrorCode::kIo,
                             ErrorCode::kTimeout,
                             ErrorCode::kUnavailable,
                             ErrorCode::kCancelled};
  std::set<std::string> names;
  for (ErrorCode code : codes) {
    const std::string name = ErrorCodeName(code);
    EXPECT_NE(name, "error") << static_cast<int>(code) << " has no name";
    EXPECT_TRUE(names.insert(name).second) << name << " names two codes";
  }
}

TEST(ErrorTest, CancelledNamesItselfInWhat) {
  try {
    Fail(ErrorCode::kCancelled, "iteration ", 3, " cut short: the executor was shut down");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCancelled);
    EXPECT_STREQ(e.what(), "cancelled: iteration 3 cut short: the executor was shut down");
    EXPECT_EQ(e.message(), "iteration 3 cut short: the executor was shut down");
    return;
  }
  ADD_FAILURE() << "Fail did not throw";
}

}  // namespace
}  // namespace rill
