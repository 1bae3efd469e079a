// The actor executor on CUDA places (skipped, saying why, without a device):
// an MLP and a CNN trained on cuda:0 end where the CPU ends (GEMMs and
// reductions sum in other orders: tolerances below); the event and the
// host-wait strategies give the same bits; the caching allocator makes no
// cudaMalloc in steady training; NCCL sums on one device, on two ranks of
// one device where NCCL permits it, and the executor's allreduce over every
// device present.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "rill/builder.h"
#include "rill/device.h"
#include "rill/device_memory.h"
#include "rill/executor.h"
#include "rill/nccl_communicators.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "runtime/device/cuda_stream.h"
#include "tests/testing/gradient_check.h"
#include "tests/testing/training.h"

namespace rill {
namespace {

using testing::CyclicLabels;
using testing::ExpectBitEqual;
using testing::RandomTensor;

#define RILL_SKIP_WITHOUT_CUDA(devices)                                                           \
  do {                                                                                            \
    std::string why;                                                                              \
    const int found = CudaDeviceCount(&why);                                                      \
    if (found < (devices)) {                                                                      \
      GTEST_SKIP() << "needs " << (devices) << " CUDA device(s), found " << found << ": " << why; \
    }                                                                                             \
  } while (0)

struct Config {
  std::vector<Place> places;
  bool cnn = false;
  DependencyWait wait = DependencyWait::kEvent;
  int threads = 1;
};

struct Trained {
  std::vector<Tensor> params;  // on the host
  std::vector<double> losses;  // fetched, per step
  DeviceMemoryStats memory_after_3, memory_after_all;
};

// 12 steps of Adam with a batch of 16; the parameters after, on the host.
Trained Train(const Config& setup) {
  Program main, startup;
  Builder b(&main, &startup, 7);
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var logits;
  if (setup.cnn) {
    Var image = b.Data("x", {-1, 1, 12, 12});
    Var c = b.Pool2d(b.Conv2d(image, 4, 3, 1, 1, Activation::kRelu), 2);
    logits = b.Fc(c, 5);
  } else {
    Var x = b.Data("x", {-1, 20});
    logits = b.Fc(b.Fc(b.Fc(x, 48, Activation::kRelu), 24, Activation::kTanh), 5);
  }
  Var loss = b.Mean(b.SoftmaxWithCrossEntropy(logits, label));
  Adam(0.01f).Minimize(b, loss);
  Scope scope;
  Executor().Run(startup.desc(), &scope);
  ExecutionStrategy strategy;
  strategy.num_threads = setup.threads;
  strategy.blas_threads = 1;
  strategy.dependency_wait = setup.wait;
  ParallelExecutor exe(main.desc(), &scope, {.places = setup.places, .strategy = strategy});
  Trained out;
  const bool cuda = !setup.places[0].host_memory();
  for (int step = 0; step < 12; ++step) {
    const Shape shape = setup.cnn ? Shape{16, 1, 12, 12} : Shape{16, 20};
    const Tensor x =
        RandomTensor(shape, 300 + static_cast<uint64_t>(step), -1, 1, DataType::kFloat32);
    const auto fetched = exe.Run({{"x", x}, {"label", CyclicLabels(16, step, 5)}}, {loss.name});
    out.losses.push_back(fetched[0].GetAsDouble(0));  // fetches come back in host memory
    if (cuda && step == 2) out.memory_after_3 = GetDeviceMemoryStats(setup.places[0]);
  }
  if (cuda) out.memory_after_all = GetDeviceMemoryStats(setup.places[0]);
  for (const auto& var : main.desc().blocks(0).vars()) {
    if (var.parameter()) out.params.push_back(scope.GetTensor(var.name()).CopyTo(Place::Cpu()));
  }
  return out;
}

// |a - b| <= atol + rtol * |a| element by element.
void ExpectClose(const std::vector<Tensor>& want, const std::vector<Tensor>& got, double atol,
                 double rtol, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(want[i].shape(), got[i].shape()) << what;
    for (int64_t j = 0; j < want[i].numel(); ++j) {
      const double a = want[i].GetAsDouble(j), b = got[i].GetAsDouble(j);
      ASSERT_LE(std::fabs(a - b), atol + rtol * std::fabs(a))
          << what << ": parameter " << i << "[" << j << "] cpu " << a << ", cuda " << b;
    }
  }
}

// Adam normalises each step's gradient, so float rounding differences of
// the GEMMs (~1e-6 relative) move a parameter by up to a few learning-rate
// multiples of that over 12 steps: 2e-4 absolute on values of order 0.1-1.
constexpr double kParamAtol = 2e-4, kParamRtol = 1e-3;

TEST(CudaExecutorTest, MlpOnCuda0TrainsLikeTheCpu) {
  RILL_SKIP_WITHOUT_CUDA(1);
  const Trained cpu = Train({{Place::Cpu()}});
  const Trained gpu = Train({{Place::Cuda(0)}});
  ExpectClose(cpu.params, gpu.params, kParamAtol, kParamRtol, "mlp");
  for (size_t s = 0; s < cpu.losses.size(); ++s) {
    EXPECT_NEAR(cpu.losses[s], gpu.losses[s], 1e-4) << "step " << s;
  }
}

TEST(CudaExecutorTest, CnnOnCuda0TrainsLikeTheCpu) {
  RILL_SKIP_WITHOUT_CUDA(1);
  const Trained cpu = Train({{Place::Cpu()}, true});
  const Trained gpu = Train({{Place::Cuda(0)}, true});
  ExpectClose(cpu.params, gpu.params, kParamAtol, kParamRtol, "cnn");
  for (size_t s = 0; s < cpu.losses.size(); ++s) {
    EXPECT_NEAR(cpu.losses[s], gpu.losses[s], 1e-4) << "step " << s;
  }
}

TEST(CudaExecutorTest, EventAndHostWaitsGiveTheSameBits) {
  RILL_SKIP_WITHOUT_CUDA(1);
  for (bool cnn : {false, true}) {
    for (int threads : {1, 2}) {  // one or two compute streams
      Config events{{Place::Cuda(0)}, cnn, DependencyWait::kEvent, threads};
      Config host = events;
      host.wait = DependencyWait::kStreamSync;
      ExpectBitEqual(Train(events).params, Train(host).params,
                     StrCat(cnn ? "cnn" : "mlp", ", threads ", threads));
    }
  }
}

// Nor does it wait for the whole device to reuse what the last step freed
// (the executor drops feeds and fetches between launches: the allocator marks
// those frees on every stream instead).
TEST(CudaExecutorTest, SteadyTrainingAllocatesNoDeviceMemoryAndNeverWaitsForTheDevice) {
  RILL_SKIP_WITHOUT_CUDA(1);
  const Trained gpu = Train({{Place::Cuda(0)}});
  EXPECT_EQ(gpu.memory_after_3.device_allocations, gpu.memory_after_all.device_allocations)
      << "cudaMalloc calls after step 3 and after step 12";
  EXPECT_EQ(gpu.memory_after_3.device_synchronizations,
            gpu.memory_after_all.device_synchronizations)
      << "device-wide waits to reuse blocks after step 3 and after step 12";
  EXPECT_GT(gpu.memory_after_all.peak_in_use_bytes, 0);
  std::printf("cuda:0 memory: peak in use %lld bytes, %lld cudaMalloc calls, %lld device waits\n",
              static_cast<long long>(gpu.memory_after_all.peak_in_use_bytes),
              static_cast<long long>(gpu.memory_after_all.device_allocations),
              static_cast<long long>(gpu.memory_after_all.device_synchronizations));
}

// A float32 buffer on `device` holding `values`.
Tensor OnDevice(const std::vector<float>& values, int device) {
  Tensor host(DataType::kFloat32, {static_cast<int64_t>(values.size())});
  std::memcpy(host.mutable_data<float>(), values.data(), values.size() * sizeof(float));
  return host.CopyTo(Place::Cuda(device));
}

TEST(CudaExecutorTest, NcclSumsOnOneDevice) {
  RILL_SKIP_WITHOUT_CUDA(1);
  NcclCommunicators comms({0});
  CudaStream stream(0, "cuda:0 comm");
  Tensor a = OnDevice({1, 2, 3}, 0);
  comms.AllReduceSum({{a.raw_data()}}, {3}, {DataType::kFloat32}, {&stream});
  stream.Synchronize();
  const Tensor back = a.CopyTo(Place::Cpu());
  EXPECT_EQ(back.GetAsDouble(0), 1);
  EXPECT_EQ(back.GetAsDouble(2), 3);
}

TEST(CudaExecutorTest, NcclTwoRanksOnOneDeviceWhereNcclPermitsIt) {
  RILL_SKIP_WITHOUT_CUDA(1);
  std::unique_ptr<NcclCommunicators> comms;
  try {
    comms = std::make_unique<NcclCommunicators>(std::vector<int>{0, 0});
  } catch (const Error& e) {
    GTEST_SKIP() << "NCCL refuses two ranks on one device: " << e.what();
  }
  CudaStream s0(0, "cuda:0 comm a"), s1(0, "cuda:0 comm b");
  Tensor a = OnDevice({1, 2}, 0), b = OnDevice({10, 20}, 0);
  comms->AllReduceSum({{a.raw_data(), b.raw_data()}}, {2}, {DataType::kFloat32}, {&s0, &s1});
  s0.Synchronize();
  s1.Synchronize();
  EXPECT_EQ(a.CopyTo(Place::Cpu()).GetAsDouble(1), 22);
  EXPECT_EQ(b.CopyTo(Place::Cpu()).GetAsDouble(0), 11);
}

TEST(CudaExecutorTest, AllreduceOverEveryDeviceTrainsLikeTheCpuPlaces) {
  RILL_SKIP_WITHOUT_CUDA(2);
  const int devices = CudaDeviceCount();
  std::vector<Place> cpu(static_cast<size_t>(devices), Place::Cpu()), gpu;
  for (int d = 0; d < devices; ++d) gpu.push_back(Place::Cuda(d));
  for (DependencyWait wait : {DependencyWait::kEvent, DependencyWait::kStreamSync}) {
    Config config{gpu};
    config.wait = wait;
    ExpectClose(Train({cpu}).params, Train(config).params, kParamAtol, kParamRtol,
                StrCat(devices, " devices"));
  }
}

// A label out of range on cuda:0 is found by the kernel and reported at the
// iteration's end (the host does not wait for it mid-step): the run fails
// naming the op and the row, and the next run with good labels trains.
TEST(CudaExecutorTest, ALabelOutOfRangeFailsItsIterationNamingTheOp) {
  RILL_SKIP_WITHOUT_CUDA(1);
  Program main, startup;
  Builder b(&main, &startup, 7);
  Var x = b.Data("x", {-1, 20});
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var loss = b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(x, 5), label));
  Adam(0.01f).Minimize(b, loss);
  Scope scope;
  Executor().Run(startup.desc(), &scope);
  ExecutionStrategy strategy;
  strategy.blas_threads = 1;
  ParallelExecutor exe(main.desc(), &scope, {.places = {Place::Cuda(0)}, .strategy = strategy});
  const Tensor batch = RandomTensor({16, 20}, 5, -1, 1, DataType::kFloat32);
  Tensor bad = CyclicLabels(16, 0, 5);
  bad.mutable_data<int64_t>()[3] = 9;
  try {
    exe.Run({{"x", batch}, {"label", bad}}, {loss.name});
    FAIL() << "a label of 9 with 5 classes trained";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("softmax_with_cross_entropy"), std::string::npos) << what;
    EXPECT_NE(what.find("row 3 is 9"), std::string::npos) << what;
  }
  const auto fetched = exe.Run({{"x", batch}, {"label", CyclicLabels(16, 0, 5)}}, {loss.name});
  EXPECT_TRUE(std::isfinite(fetched[0].GetAsDouble(0)));
}

TEST(CudaExecutorTest, CpuKernelsRefuseDeviceInputsNamingThePlace) {
  RILL_SKIP_WITHOUT_CUDA(1);
  Program main, startup;
  Builder b(&main, &startup, 1);
  Var x = b.Data("x", {-1, 3});
  Var y = b.Scale(x, 2.0f);
  Scope scope;
  try {
    Executor().Run(main.desc(), &scope, {{"x", OnDevice({1, 2, 3}, 0).Reshaped({1, 3})}}, {y.name});
    FAIL() << "a CPU kernel read device memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rill
