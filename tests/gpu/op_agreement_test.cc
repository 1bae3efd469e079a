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

#include "rill/device.h"
#include "rill/kernel_context.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/scope.h"
#include "runtime/device/cuda_stream.h"
#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {

std::vector<std::string> OutputVariables(const Case& c) {
  std::vector<std::string> names;
  for (const std::string& slot : c.outputs) names.push_back("out_" + slot);
  for (const auto& [slot, vars] : c.output_lists)
    names.insert(names.end(), vars.begin(), vars.end());
  return names;
}

namespace {

using testing::RandomTensor;

// The op's outputs by variable name, run on `place` (inputs copied there,
// outputs back).
std::map<std::string, Tensor> RunOn(const Case& c, const Place& place) {
  proto::OpDesc desc;
  desc.set_type(c.type);
  Scope scope;
  auto bind_input = [&](proto::Slot* in, const std::string& name, const Tensor& value) {
    in->add_vars(name);
    Variable* var = scope.Var(name);
    if (value.initialized()) *var->mutable_tensor() = value.CopyTo(place);
  };
  for (const auto& [slot, value] : c.inputs) {
    auto* in = desc.add_inputs();
    in->set_name(slot);
    bind_input(in, "in_" + slot, value);
  }
  for (const auto& [slot, vars] : c.input_lists) {
    auto* in = desc.add_inputs();
    in->set_name(slot);
    for (const auto& [name, value] : vars) bind_input(in, name, value);
  }
  for (const std::string& slot : c.outputs) {
    auto* out = desc.add_outputs();
    out->set_name(slot);
    out->add_vars("out_" + slot);
  }
  for (const auto& [slot, vars] : c.output_lists) {
    auto* out = desc.add_outputs();
    out->set_name(slot);
    for (const std::string& name : vars) out->add_vars(name);
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
  for (const std::string& name : OutputVariables(c)) {
    out[name] = scope.GetTensor(name).CopyTo(Place::Cpu());
  }
  return out;
}

std::vector<Case> Cases() {
  std::vector<Case> all;
  for (const auto& group :
       {ActivationCases, UnaryCases, OptimizerCases, TensorCases, BinaryCases, ReduceCases,
        SoftmaxCases, ShapeCases, TopKCases, EmbeddingDropoutCases, RandomCases, GemmCases,
        NormCompareCases, ConvCases, PoolCases, NormCases, RnnCases}) {
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
    for (const std::string& name : OutputVariables(c)) {
      ASSERT_TRUE(out.count(name)) << name;
      EXPECT_TRUE(out.at(name).initialized()) << name;
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
    for (const std::string& name : OutputVariables(c)) {
      const Tensor& a = cpu.at(name);
      const Tensor& b = gpu.at(name);
      if (a.shape() != b.shape() || a.dtype() != b.dtype()) {
        ADD_FAILURE() << name << ": the CPU gives " << ShapeToString(a.shape()) << " "
                      << DataTypeName(a.dtype()) << ", CUDA " << ShapeToString(b.shape()) << " "
                      << DataTypeName(b.dtype());
        continue;
      }
      // Every case runs, and each output reports its first few disagreements
      // and their count: one run on a GPU shows everything that disagrees.
      int64_t disagree = 0;
      for (int64_t i = 0; i < a.numel(); ++i) {
        const double want = a.GetAsDouble(i), got = b.GetAsDouble(i);
        // Equal infinities and NaN on both sides agree (inf - inf is NaN).
        if (want == got || (std::isnan(want) && std::isnan(got))) continue;
        if (std::fabs(want - got) <= c.atol + c.rtol * std::fabs(want)) continue;
        if (++disagree <= 3) {
          ADD_FAILURE() << name << "[" << i << "]: cpu " << want << ", cuda " << got;
        }
      }
      if (disagree > 3) ADD_FAILURE() << name << ": " << disagree << " elements disagree in all";
    }
  }
}

}  // namespace
}  // namespace rill
