// Winograd's tile transforms with 32-byte vectors; this file is compiled with
// -mavx2 (ops/nn/CMakeLists.txt) and runs only where the CPU has AVX2
// (winograd.cc asks).
#include "ops/nn/winograd_lanes.inc"

namespace rill {

WinogradTransforms<float> WinogradTransformsAvx2(float, int kernel) {
  return LaneTransforms<float, 32>(kernel);
}
WinogradTransforms<double> WinogradTransformsAvx2(double, int kernel) {
  return LaneTransforms<double, 32>(kernel);
}

}  // namespace rill
