// Agreement cases of the activation ops' CUDA kernels (ops/nn/activation_cuda.cu):
// relu, sigmoid, tanh, gelu and their gradients.
#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {

std::vector<Case> ActivationCases() {
  using testing::RandomTensor;
  const Tensor x = RandomTensor({37, 129}, 1, -1, 1, DataType::kFloat32);
  const Tensor dy = RandomTensor({37, 129}, 2, -1, 1, DataType::kFloat32);
  const Tensor x64 = RandomTensor({1000}, 3, -1, 1);
  const Tensor dy64 = RandomTensor({1000}, 4, -1, 1);
  // sigmoid and tanh over their curved range and out into saturation.
  const Tensor wide = RandomTensor({37, 129}, 5, -20, 20, DataType::kFloat32);
  const Tensor wide64 = RandomTensor({1000}, 6, -40, 40);
  // Forward outputs as the gradient ops read them: sigmoid's in (0, 1).
  const Tensor s = RandomTensor({37, 129}, 7, 0, 1, DataType::kFloat32);
  const Tensor s64 = RandomTensor({1000}, 8, 0, 1);
  // relu is exact: a comparison and a copy.
  // sigmoid and tanh: exp and tanh differ in the last bits between the CPU's
  // libm (glibc, under 1 ulp) and CUDA's (expf, tanhf: up to 2 ulp; exp,
  // tanh: 1 and 2 ulp), and 1 / (1 + e) passes e's relative error on at most
  // unchanged: a few ulp, 2^-23 = 1.2e-7 relative in float32 and 2^-52 =
  // 2.2e-16 in float64, well inside atol 1e-6 rtol 1e-5 (float32) and
  // 1e-12/1e-12 (float64).
  // Their gradients are exact: multiplications and a subtraction on the same
  // inputs in the same order, each rounded on its own (the CUDA kernels use
  // the _rn intrinsics, so nvcc fuses nothing into an FMA; the x86-64 CPU
  // build has no FMA).
  return {
      {"relu", {{"X", x}}, {"Out"}, 0, 0},
      {"relu", {{"X", x64}}, {"Out"}, 0, 0},
      {"relu_grad", {{"Out", x}, {"Out@GRAD", dy}}, {"X@GRAD"}, 0, 0},
      {"relu_grad", {{"Out", x}}, {"X@GRAD"}, 0, 0},  // no Out@GRAD: zeros
      {"sigmoid", {{"X", x}}, {"Out"}, 1e-6, 1e-5},
      {"sigmoid", {{"X", wide}}, {"Out"}, 1e-6, 1e-5},
      {"sigmoid", {{"X", x64}}, {"Out"}, 1e-12, 1e-12},
      {"sigmoid", {{"X", wide64}}, {"Out"}, 1e-12, 1e-12},
      {"sigmoid_grad", {{"Out", s}, {"Out@GRAD", dy}}, {"X@GRAD"}, 0, 0},
      {"sigmoid_grad", {{"Out", s64}, {"Out@GRAD", dy64}}, {"X@GRAD"}, 0, 0},
      {"sigmoid_grad", {{"Out", s}}, {"X@GRAD"}, 0, 0},  // no Out@GRAD: zeros
      {"sigmoid_grad", {{"Out", s64}}, {"X@GRAD"}, 0, 0},
      {"tanh", {{"X", x}}, {"Out"}, 1e-6, 1e-5},
      {"tanh", {{"X", wide}}, {"Out"}, 1e-6, 1e-5},
      {"tanh", {{"X", x64}}, {"Out"}, 1e-12, 1e-12},
      {"tanh", {{"X", wide64}}, {"Out"}, 1e-12, 1e-12},
      {"tanh_grad", {{"Out", x}, {"Out@GRAD", dy}}, {"X@GRAD"}, 0, 0},  // tanh's Out: (-1, 1)
      {"tanh_grad", {{"Out", x64}, {"Out@GRAD", dy64}}, {"X@GRAD"}, 0, 0},
      {"tanh_grad", {{"Out", x}}, {"X@GRAD"}, 0, 0},  // no Out@GRAD: zeros
      {"tanh_grad", {{"Out", x64}}, {"X@GRAD"}, 0, 0},
      // gelu and its gradient: erf and exp differ by a few ulp between glibc
      // and CUDA (erff: 2 ulp, erf: 2 ulp), passed on at most unchanged
      // through the products and sums after them; as sigmoid's bounds.
      {"gelu", {{"X", wide}}, {"Out"}, 1e-6, 1e-5},
      {"gelu", {{"X", wide64}}, {"Out"}, 1e-12, 1e-12},
      {"gelu_grad", {{"X", wide}, {"Out@GRAD", dy}}, {"X@GRAD"}, 1e-6, 1e-5},
      {"gelu_grad", {{"X", wide64}, {"Out@GRAD", dy64}}, {"X@GRAD"}, 1e-12, 1e-12},
      {"gelu_grad", {{"X", x}}, {"X@GRAD"}, 0, 0},  // no Out@GRAD: zeros
  };
}

}  // namespace rill
