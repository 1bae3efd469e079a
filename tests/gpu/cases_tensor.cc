// Agreement cases of the tensor ops' CUDA kernels (ops/tensor/tensor_cuda.cu).
// All exact (tolerance 0): the kernels fill a value converted on the host as
// the CPU converts it, write zero bytes, or copy bytes.
#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

Case FillConstant(const std::vector<int64_t>& shape, const std::string& dtype, float value) {
  return {"fill_constant",
          {},
          {"Out"},
          0,
          0,
          {{"shape", IntsAttr("shape", shape)},
           {"dtype", StringAttr("dtype", dtype)},
           {"value", FloatAttr("value", value)}}};
}

}  // namespace

std::vector<Case> TensorCases() {
  using testing::MakeTensor;
  using testing::RandomTensor;
  const Tensor x32 = RandomTensor({37, 129}, 41, -1, 1, DataType::kFloat32);
  const Tensor x64 = RandomTensor({1000}, 42);
  const Tensor i32 = MakeTensor<int32_t>({2, 3}, {1, -2, 3, -4, 5, 2147483647});
  const Tensor i64 = MakeTensor<int64_t>({4}, {int64_t{1} << 40, -7, 0, 9});
  const Tensor empty(DataType::kFloat32, {0, 5});
  // More elements than one launch's grid holds threads.
  const Tensor big = RandomTensor({1100, 1000}, 43, -1, 1, DataType::kFloat32);
  std::vector<Case> cases = {
      // fill_constant: every dtype; float64 gets 0.1f as the double 0.1, the
      // integer types the value truncated toward zero.
      FillConstant({37, 129}, "float32", 0.1f),
      FillConstant({1000}, "float64", 0.1f),
      FillConstant({2, 3, 4}, "int32", 3.7f),
      FillConstant({5}, "int64", -2.5f),
      FillConstant({1100, 1000}, "float32", -1.5f),
      FillConstant({0, 3}, "float32", 1.0f),
      {"fill_constant",
       {},
       {"Out"},
       0,
       0,
       {{"shape", IntsAttr("shape", {3, 2})}}},  // defaults: float32 zeros
  };
  for (const Tensor& x : {x32, x64, i32, i64, empty, big}) {
    cases.push_back({"fill_zeros_like", {{"X", x}}, {"Out"}, 0, 0});
    cases.push_back({"assign", {{"X", x}}, {"Out"}, 0, 0});
  }
  return cases;
}

}  // namespace rill
