// Winograd's tile transforms with 16-byte vectors: what every machine runs
// unless a wider build applies (winograd_lanes.h).
#include "ops/nn/winograd_lanes.inc"

namespace rill {

WinogradTransforms<float> WinogradTransforms16(float, int kernel) {
  return LaneTransforms<float, 16>(kernel);
}
WinogradTransforms<double> WinogradTransforms16(double, int kernel) {
  return LaneTransforms<double, 16>(kernel);
}

}  // namespace rill
