// Where Rill's own messages go: everything the library reports without
// failing a call (a trace written at exit, a parameter server's rejected
// message, a fiber that ended with an exception, a watchdog report) goes
// through one sink, so that a trainer embedding Rill can route it into its
// own logging.
//
//   SetLogSink([](LogLevel level, const std::string& message) {
//     my_logger.Write(LogLevelName(level), message);
//   });
//   ...
//   SetLogSink(nullptr);  // back to standard error
//
// The default sink writes each message as one line "rill: <message>" to
// standard error. Thread-safety: Log and SetLogSink may be called from any
// thread; the sink is called on the thread that logs, possibly on several
// at once, and must be thread-safe itself. A sink that throws loses nothing:
// the message then goes to standard error. The sink may still be called
// while the process exits (a trace written by an exit handler): restore the
// default before what it captures is destroyed.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "rill/error.h"

namespace rill {

enum class LogLevel {
  kInfo,     // something worth knowing happened (a trace written, a peer connected)
  kWarning,  // something was refused or left behind, and the work goes on
  kError,    // something failed that no caller will hear of otherwise
};

// "info", "warning", "error".
const char* LogLevelName(LogLevel level);

using LogSink = std::function<void(LogLevel level, const std::string& message)>;

// Replaces the sink of every later message; null restores the default.
void SetLogSink(LogSink sink);

// Sends one message (without a trailing newline) to the sink.
void LogMessage(LogLevel level, const std::string& message);

// Concatenates the parts (anything printable with operator<<) into one message.
template <class... Args>
void Log(LogLevel level, Args&&... args) {
  LogMessage(level, StrCat(std::forward<Args>(args)...));
}

}  // namespace rill
