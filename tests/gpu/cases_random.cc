// Agreement cases of uniform_random and gaussian_random's CUDA kernels
// (ops/tensor/random_op_cuda.cc).
//
// All exact (atol 0, rtol 0): the CUDA kernels draw on the host from the op's
// generator with the CPU kernels' draws and arithmetic, then copy the values
// to the device. Each case runs the op once per place with a generator seeded
// alike (as the executor seeds it from the `seed` attribute, or from the
// program's seed when that is 0); cases_embedding_dropout.cc checks that the
// generators also agree from run to run, and through the executor.
#include <cstdint>
#include <string>
#include <vector>

#include "tests/gpu/op_cases.h"

namespace rill {
namespace {

Case Uniform(const std::vector<int64_t>& shape, const std::string& dtype, float min, float max,
             int64_t seed) {
  return {"uniform_random",
          {},
          {"Out"},
          0,
          0,
          {{"shape", IntsAttr("shape", shape)},
           {"dtype", StringAttr("dtype", dtype)},
           {"min", FloatAttr("min", min)},
           {"max", FloatAttr("max", max)},
           {"seed", IntAttr("seed", seed)}}};
}

Case Gaussian(const std::vector<int64_t>& shape, const std::string& dtype, float mean, float std,
              int64_t seed) {
  return {"gaussian_random",
          {},
          {"Out"},
          0,
          0,
          {{"shape", IntsAttr("shape", shape)},
           {"dtype", StringAttr("dtype", dtype)},
           {"mean", FloatAttr("mean", mean)},
           {"std", FloatAttr("std", std)},
           {"seed", IntAttr("seed", seed)}}};
}

}  // namespace

std::vector<Case> RandomCases() {
  return {
      // uniform_random: both types, the defaults, a seed and none, an empty
      // shape, more elements than one launch's grid holds threads, and a wide
      // float32 range where rounding lands on max (kept below it).
      Uniform({37, 129}, "float32", -1, 1, 7),
      Uniform({1001}, "float64", -1, 1, 7),
      Uniform({5, 3}, "float32", -0.25f, 3.5f, 0),
      Uniform({0, 3}, "float32", -1, 1, 3),
      Uniform({1100, 1000}, "float32", 0, 1, 11),
      Uniform({4096}, "float32", 1.0f, 1.0000001f, 5),
      Uniform({64}, "float64", 2, 2, 5),                                              // min == max
      {"uniform_random", {}, {"Out"}, 0, 0, {{"shape", IntsAttr("shape", {3, 4})}}},  // defaults
      // gaussian_random: an odd count (the last pair's second value
      // dropped), an even one, std 0, both types, an empty shape, a big one.
      Gaussian({37, 129}, "float32", 0, 1, 7),
      Gaussian({1000}, "float64", -3, 0.5f, 7),
      Gaussian({7}, "float32", 1.5f, 2, 0),
      Gaussian({8}, "float64", 0, 0, 2),
      Gaussian({0}, "float32", 0, 1, 3),
      Gaussian({1100, 1000}, "float32", 0, 0.02f, 13),
      {"gaussian_random", {}, {"Out"}, 0, 0, {{"shape", IntsAttr("shape", {5})}}},  // defaults
  };
}

}  // namespace rill
