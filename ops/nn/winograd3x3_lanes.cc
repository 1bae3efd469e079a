// Winograd's tile transforms with 16-byte vectors: what every machine runs
// unless a wider build applies (winograd3x3_lanes.h).
#include "ops/nn/winograd3x3_lanes.inc"

namespace rill {

WinogradTransforms<float> WinogradTransforms16(float) { return LaneTransforms<float, 16>(); }
WinogradTransforms<double> WinogradTransforms16(double) { return LaneTransforms<double, 16>(); }

}  // namespace rill
