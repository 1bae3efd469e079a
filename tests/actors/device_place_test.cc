// The stream and event protocol of device places, on the asynchronous CPU
// device ("acpu:i": each stream a thread, events between streams): training
// on acpu places gives the CPU places' numbers bit for bit, under both
// DependencyWait strategies, with one and two compute streams per device,
// allreduce and reduce, merges fused or one per gradient (each place's comm
// stream runs them in the collectives' order), compressed merges too; a
// kernel failing on a device stream fails its iteration naming the op and
// the place, and the next iteration works.
#include <gtest/gtest.h>

#include <string>

#include "rill/builder.h"
#include "rill/device.h"
#include "rill/executor.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "tests/testing/gradient_check.h"
#include "tests/testing/training.h"

namespace rill {
namespace {

using testing::CyclicLabels;
using testing::ExpectBitEqual;
using testing::RandomTensor;

struct Config {
  std::vector<Place> places;
  DependencyWait wait = DependencyWait::kEvent;
  int threads = 2;
  ReduceStrategy reduce = ReduceStrategy::kAllReduce;
  int64_t fuse_bytes = 256 * 1024;
  GradientCompression compression = GradientCompression::kNone;
};

// 12 steps of Adam on an MLP with a float32 batch of 16; the parameters after.
std::vector<Tensor> Train(const Config& setup) {
  Program main, startup;
  Builder b(&main, &startup, 7);
  Var x = b.Data("x", {-1, 20});
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var h = b.Fc(b.Fc(x, 48, Activation::kRelu), 24, Activation::kTanh);
  Var loss = b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(h, 5), label));
  Adam(0.01f).Minimize(b, loss);
  Scope scope;
  Executor().Run(startup.desc(), &scope);
  ExecutionStrategy strategy;
  strategy.num_threads = setup.threads;
  strategy.blas_threads = 1;
  strategy.dependency_wait = setup.wait;
  strategy.stream_assignment = StreamAssignment::kRoundRobin;  // ops on every stream
  BuildStrategy build;
  build.reduce = setup.reduce;
  build.fuse_bytes = setup.fuse_bytes;
  build.gradient_compression = setup.compression;
  build.compression_min_elements = 500;
  ParallelExecutor exe(main.desc(), &scope,
                       {.places = setup.places, .strategy = strategy, .build = build});
  for (int step = 0; step < 12; ++step) {
    const Tensor x_value =
        RandomTensor({16, 20}, 300 + static_cast<uint64_t>(step), -1, 1, DataType::kFloat32);
    exe.Run({{"x", x_value}, {"label", CyclicLabels(16, step, 5)}}, {loss.name});
  }
  std::vector<Tensor> params;
  for (const auto& var : main.desc().blocks(0).vars()) {
    if (var.parameter()) params.push_back(scope.GetTensor(var.name()).Clone());
  }
  return params;
}

const std::vector<Place> kCpu2 = {Place::Cpu(), Place::Cpu()};
const std::vector<Place> kAsync2 = {Place::AsyncCpu(0), Place::AsyncCpu(1)};

TEST(DevicePlaceTest, PlacesParseAndHaveStreams) {
  EXPECT_EQ(ParsePlaces("acpu:0,acpu:1"), kAsync2);
  EXPECT_EQ(Place::AsyncCpu(3).ToString(), "acpu:3");
  try {
    ParsePlaces("acpu:0,acpu:x");
    FAIL() << "acpu:x accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad place \"acpu:x\" (expected cpu, cuda:<index> or "
                                         "acpu:<index>)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(Place::AsyncCpu(0).is_device());
  EXPECT_TRUE(Place::AsyncCpu(0).host_memory());
  EXPECT_FALSE(Place::Cuda(0).host_memory());
  EXPECT_EQ(NewDeviceStream(Place::AsyncCpu(1), "comm")->Describe(), "acpu:1 comm");
  EXPECT_THROW(NewDeviceStream(Place::Cpu(), "compute 0"), Error);
  if (!BuiltWithCuda()) {
    EXPECT_THROW(NewDeviceStream(Place::Cuda(0), "compute 0"), Error);
  }
}

TEST(DevicePlaceTest, OneAsyncPlaceTrainsLikeTheCpu) {
  Config cpu{{Place::Cpu()}}, device{{Place::AsyncCpu(0)}};
  cpu.threads = device.threads = 1;
  ExpectBitEqual(Train(cpu), Train(device), "acpu:0");
  cpu.threads = device.threads = 2;  // two compute streams: waits between them
  ExpectBitEqual(Train(cpu), Train(device), "acpu:0, two streams");
}

TEST(DevicePlaceTest, BothWaitStrategiesGiveTheCpuNumbers) {
  for (ReduceStrategy reduce : {ReduceStrategy::kAllReduce, ReduceStrategy::kReduce}) {
    for (int threads : {2, 4}) {  // one or two compute streams per device
      Config cpu{kCpu2};
      cpu.reduce = reduce;
      cpu.threads = threads;
      const std::vector<Tensor> want = Train(cpu);
      for (DependencyWait wait : {DependencyWait::kEvent, DependencyWait::kStreamSync}) {
        Config device = cpu;
        device.places = kAsync2;
        device.wait = wait;
        ExpectBitEqual(want, Train(device),
                       std::string(reduce == ReduceStrategy::kReduce ? "reduce" : "allreduce") +
                           (wait == DependencyWait::kEvent ? ", events" : ", stream sync") +
                           ", threads " + std::to_string(threads));
      }
    }
  }
}

TEST(DevicePlaceTest, MergesOnePerGradientRunInOrderOnTheCommStreams) {
  Config cpu{kCpu2};
  cpu.fuse_bytes = 0;  // six merges, issued as their gradients complete
  Config device = cpu;
  device.places = kAsync2;
  ExpectBitEqual(Train(cpu), Train(device), "a merge per gradient");
  cpu.compression = device.compression = GradientCompression::kInt8;
  ExpectBitEqual(Train(cpu), Train(device), "int8 merges");
}

TEST(DevicePlaceTest, AKernelFailingOnADeviceStreamFailsItsIterationOnly) {
  Program main, startup;
  Builder b(&main, &startup, 3);
  Var x = b.Data("x", {-1, 4});
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var loss = b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(x, 3), label));
  SGD(0.1f).Minimize(b, loss);
  Scope scope;
  Executor().Run(startup.desc(), &scope);
  ExecutionStrategy strategy;
  strategy.num_threads = 2;
  ParallelExecutor exe(main.desc(), &scope, {.places = kAsync2, .strategy = strategy});
  Tensor bad = CyclicLabels(4, 0, 3);
  bad.mutable_data<int64_t>()[3] = 7;  // out of range, in place 1's rows
  const Tensor x_value = RandomTensor({4, 4}, 9, -1, 1, DataType::kFloat32);
  try {
    exe.Run({{"x", x_value}, {"label", bad}}, {loss.name});
    FAIL() << "expected the kernel's error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("softmax_with_cross_entropy"), std::string::npos) << what;
    EXPECT_NE(what.find("acpu:1"), std::string::npos) << what;
  }
  const auto out = exe.Run({{"x", x_value}, {"label", CyclicLabels(4, 1, 3)}}, {loss.name});
  EXPECT_TRUE(std::isfinite(out[0].GetAsDouble(0)));
}

}  // namespace
}  // namespace rill
