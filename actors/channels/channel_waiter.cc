#include "rill/channel_waiter.h"

namespace rill {

const char* ChannelStatusName(ChannelStatus status) {
  switch (status) {
    case ChannelStatus::kOk: return "ok";
    case ChannelStatus::kClosed: return "closed";
    case ChannelStatus::kTimeout: return "timeout";
    case ChannelStatus::kWouldBlock: return "would block";
  }
  return "unknown";
}

}  // namespace rill
