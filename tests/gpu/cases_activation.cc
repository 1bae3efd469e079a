// Agreement cases of the activation ops' CUDA kernels (ops/nn/activation_cuda.cu).
#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {

proto::Attr FloatAttr(const std::string& name, float value) {
  proto::Attr attr;
  attr.set_name(name);
  attr.set_f(value);
  return attr;
}

proto::Attr IntAttr(const std::string& name, int64_t value) {
  proto::Attr attr;
  attr.set_name(name);
  attr.set_i(value);
  return attr;
}

std::vector<Case> ActivationCases() {
  using testing::RandomTensor;
  const Tensor x = RandomTensor({37, 129}, 1, -1, 1, DataType::kFloat32);
  const Tensor dy = RandomTensor({37, 129}, 2, -1, 1, DataType::kFloat32);
  const Tensor x64 = RandomTensor({1000}, 3, -1, 1);
  // relu is exact: a comparison and a copy.
  return {
      {"relu", {{"X", x}}, {"Out"}, 0, 0},
      {"relu", {{"X", x64}}, {"Out"}, 0, 0},
      {"relu_grad", {{"Out", x}, {"Out@GRAD", dy}}, {"X@GRAD"}, 0, 0},
      {"relu_grad", {{"Out", x}}, {"X@GRAD"}, 0, 0},  // no Out@GRAD: zeros
  };
}

}  // namespace rill
