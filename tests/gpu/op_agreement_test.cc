// Every op with a CUDA kernel, run on the CPU and on cuda:0 with the same
// inputs: the outputs agree within the case's tolerance. Skips, saying why,
// where there is no CUDA device (tools/gpu-check.sh runs it on a GPU
// machine). A kernel registered without a case here fails the suite.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/device/cuda_stream.h"
#include "runtime/device/device.h"
#include "runtime/kernel_context.h"
#include "runtime/op_desc.h"
#include "runtime/op_registry.h"
#include "runtime/scope.h"
#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using testing::RandomTensor;

// The op's outputs, run on `place` (inputs copied there, outputs back).
std::map<std::string, Tensor> RunOn(const Case& c, const Place& place) {
  proto::OpDesc desc;
  desc.set_type(c.type);
  Scope scope;
  for (const auto& [slot, value] : c.inputs) {
    auto* in = desc.add_inputs();
    in->set_name(slot);
    in->add_vars("in_" + slot);
    *scope.Var("in_" + slot)->mutable_tensor() = value.CopyTo(place);
  }
  for (const std::string& slot : c.outputs) {
    auto* out = desc.add_outputs();
    out->set_name(slot);
    out->add_vars("out_" + slot);
  }
  const OpSchema& schema = GetOpSchema(c.type);
  for (const auto& [name, value] : c.attrs) *desc.add_attrs() = value;
  KernelContext ctx(desc, schema, &scope, place, 1);
  const KernelFn* kernel = schema.FindKernel(place.kind);
  if (place.host_memory()) {
    (*kernel)(ctx);
  } else {
    CudaStream stream(place.device, "cuda:0 compute");
    stream.Launch([&] { (*kernel)(ctx); });
    stream.Synchronize();
  }
  std::map<std::string, Tensor> out;
  for (const std::string& slot : c.outputs) {
    out[slot] = scope.GetTensor("out_" + slot).CopyTo(Place::Cpu());
  }
  return out;
}

std::vector<Case> Cases() {
  std::vector<Case> all;
  for (const auto& group : {ActivationCases, UnaryCases, OptimizerCases, TensorCases, BinaryCases,
                            ReduceCases, SoftmaxCases}) {
    for (Case& c : group()) all.push_back(std::move(c));
  }
  return all;
}

TEST(OpAgreementTest, EveryCudaKernelHasACase) {
  std::set<std::string> covered;
  for (const Case& c : Cases()) covered.insert(c.type);
  std::vector<std::string> missing_kernel;
  for (const std::string& type : RegisteredOpTypes()) {
    const OpSchema& schema = GetOpSchema(type);
    if (schema.FindKernel(Place::Kind::kCuda) != nullptr) {
      EXPECT_TRUE(covered.count(type)) << type << " has a CUDA kernel but no case here";
    } else if (schema.FindKernel(Place::Kind::kCpu) != nullptr && !schema.blocking()) {
      missing_kernel.push_back(type);  // a compute op (protocol ops run on the host)
    }
  }
  if (!BuiltWithCuda()) GTEST_SKIP() << "this build of Rill has no CUDA";
  std::string list;
  for (const auto& type : missing_kernel) list += " " + type;
  std::printf("ops without a CUDA kernel (%zu):%s\n", missing_kernel.size(), list.c_str());
}

// The cases themselves are checked where there is no GPU: each runs on the
// CPU and gives every output it names.
TEST(OpAgreementTest, EveryCaseRunsOnTheCpu) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.type);
    const auto out = RunOn(c, Place::Cpu());
    for (const std::string& slot : c.outputs) {
      ASSERT_TRUE(out.count(slot)) << slot;
      EXPECT_TRUE(out.at(slot).initialized()) << slot;
    }
  }
}

TEST(OpAgreementTest, CpuAndCudaAgree) {
  std::string why;
  if (CudaDeviceCount(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.type);
    const auto cpu = RunOn(c, Place::Cpu());
    const auto gpu = RunOn(c, Place::Cuda(0));
    for (const std::string& slot : c.outputs) {
      const Tensor& a = cpu.at(slot);
      const Tensor& b = gpu.at(slot);
      ASSERT_EQ(a.shape(), b.shape()) << slot;
      ASSERT_EQ(a.dtype(), b.dtype()) << slot;
      for (int64_t i = 0; i < a.numel(); ++i) {
        const double want = a.GetAsDouble(i), got = b.GetAsDouble(i);
        ASSERT_LE(std::fabs(want - got), c.atol + c.rtol * std::fabs(want))
            << slot << "[" << i << "]: cpu " << want << ", cuda " << got;
      }
    }
  }
}

}  // namespace
}  // namespace rill
