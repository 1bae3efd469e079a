// CapturedLog: a log sink (rill/log.h) for tests that keeps every message.
#pragma once

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "rill/log.h"

namespace rill::testing {

struct CapturedLog {
  std::mutex mutex;
  std::vector<std::pair<LogLevel, std::string>> messages;

  LogSink Sink() {
    return [this](LogLevel level, const std::string& message) {
      std::lock_guard<std::mutex> lock(mutex);
      messages.emplace_back(level, message);
    };
  }
  // The first message containing `part`, or null.
  const std::pair<LogLevel, std::string>* Find(const std::string& part) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& m : messages) {
      if (m.second.find(part) != std::string::npos) return &m;
    }
    return nullptr;
  }
};

}  // namespace rill::testing
