// The learning rate of warmup_cosine_decay (warmup_cosine_op.cc), shared by
// the CPU kernel and the CUDA one (optimizer_cuda.cu, compiled by nvcc as
// C++17): one formula, computed in double.
#pragma once

#include <cmath>

#ifdef __CUDACC__
#define RILL_HOST_DEVICE __host__ __device__
#else
#define RILL_HOST_DEVICE
#endif

namespace rill {

// The op's attributes, min_ratio widened by DecimalDouble.
struct WarmupCosineAttrs {
  int warmup_steps = 0;
  int decay_steps = 1;
  double min_ratio = 0;
};

// `step` counts the steps taken, this one included (1 at the first step).
// Linear warm-up to `base` over `warmup_steps`, then half a cosine from
// `base` down to min_ratio * base over `decay_steps`, and min_ratio * base
// after that.
RILL_HOST_DEVICE inline double WarmupCosineRate(double base, double step, int warmup_steps,
                                                int decay_steps, double min_ratio) {
  if (step < warmup_steps) return base * (step / warmup_steps);
  double progress = (step - warmup_steps) / decay_steps;
  if (progress > 1) progress = 1;
  if (progress < 0) progress = 0;
  const double kPi = 3.14159265358979323846;
  return base * (min_ratio + (1 - min_ratio) * 0.5 * (1 + cos(kPi * progress)));
}

}  // namespace rill
