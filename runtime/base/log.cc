// The process-wide log sink (rill/log.h).
#include "rill/log.h"

#include <cstdio>
#include <memory>
#include <mutex>

namespace rill {
namespace {

// One line on standard error, written with a single call so that lines from
// several threads do not interleave.
void WriteToStandardError(const std::string& message) {
  std::string line = "rill: " + message;
  if (line.empty() || line.back() != '\n') line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

struct SinkHolder {
  std::mutex mutex;
  std::shared_ptr<const LogSink> sink;  // null: standard error; guarded by mutex
};

// Never destroyed: messages logged by exit handlers and static destructors
// still find it.
SinkHolder& Holder() {
  static SinkHolder* holder = new SinkHolder;
  return *holder;
}

}  // namespace

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "unknown";
}

void SetLogSink(LogSink sink) {
  auto installed = sink ? std::make_shared<const LogSink>(std::move(sink)) : nullptr;
  SinkHolder& holder = Holder();
  std::lock_guard<std::mutex> lock(holder.mutex);
  holder.sink = std::move(installed);
}

void LogMessage(LogLevel level, const std::string& message) {
  std::shared_ptr<const LogSink> sink;
  {
    SinkHolder& holder = Holder();
    std::lock_guard<std::mutex> lock(holder.mutex);
    sink = holder.sink;
  }
  // Called outside the lock: a slow sink delays only its own thread, and a
  // sink may log or replace itself.
  if (!sink) {
    WriteToStandardError(message);
    return;
  }
  try {
    (*sink)(level, message);
  } catch (const std::exception& e) {
    WriteToStandardError(StrCat(message, " (the log sink threw: ", e.what(), ")"));
  } catch (...) {
    WriteToStandardError(StrCat(message, " (the log sink threw)"));
  }
}

}  // namespace rill
