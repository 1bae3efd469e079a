// The CUDA device layer on a GPU: streams and events (a stream waits for
// another's event; host waits), the caching allocator (no cudaMalloc for a
// block freed and asked for again; peak and in-use bytes), copies between
// host and device. Skips, saying why, without a CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rill/device.h"
#include "rill/device_memory.h"
#include "rill/error.h"
#include "rill/tensor.h"
#include "runtime/device/cuda_stream.h"

namespace rill {
namespace {

// GTEST_SKIP returns from the function it is in: a macro, so that it is the test.
#define REQUIRE_CUDA_DEVICE()                                                  \
  do {                                                                         \
    std::string why;                                                           \
    if (CudaDeviceCount(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why; \
  } while (false)

TEST(CudaDeviceTest, TensorsGoToTheDeviceAndBack) {
  REQUIRE_CUDA_DEVICE();
  Tensor host(DataType::kFloat32, {1000});
  for (int i = 0; i < 1000; ++i) host.mutable_data<float>()[i] = 0.5f * static_cast<float>(i);
  const Tensor device = host.CopyTo(Place::Cuda(0));
  EXPECT_EQ(device.place(), Place::Cuda(0));
  Tensor again;
  again.CopyFrom(device);  // device to device
  const Tensor back = again.CopyTo(Place::Cpu());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(back.data<float>()[i], 0.5f * static_cast<float>(i));
}

TEST(CudaDeviceTest, TheCachingAllocatorReusesFreedBlocksAndCounts) {
  REQUIRE_CUDA_DEVICE();
  const Place gpu = Place::Cuda(0);
  ReleaseCachedDeviceMemory(gpu);
  const DeviceMemoryStats before = GetDeviceMemoryStats(gpu);
  {
    Tensor a(DataType::kFloat32, {1 << 20}, gpu);  // 4 MiB
    const DeviceMemoryStats during = GetDeviceMemoryStats(gpu);
    EXPECT_GE(during.in_use_bytes - before.in_use_bytes, 4 << 20);
    EXPECT_GE(during.peak_in_use_bytes, during.in_use_bytes);
  }
  const DeviceMemoryStats freed = GetDeviceMemoryStats(gpu);
  EXPECT_EQ(freed.in_use_bytes, before.in_use_bytes);
  EXPECT_GE(freed.cached_bytes, 4 << 20);
  { Tensor b(DataType::kFloat32, {1 << 20}, gpu); }
  EXPECT_EQ(GetDeviceMemoryStats(gpu).device_allocations, freed.device_allocations)
      << "a freed block of the same size was not reused";
}

TEST(CudaDeviceTest, StreamsWaitForEachOthersEvents) {
  REQUIRE_CUDA_DEVICE();
  CudaStream producer(0, "cuda:0 compute"), consumer(0, "cuda:0 copy");
  const size_t n = 64 << 20;  // a copy long enough to still run when the wait is queued
  Tensor big(DataType::kFloat32, {static_cast<int64_t>(n / 4)});
  big.Fill(1.0);
  Tensor device(DataType::kFloat32, big.shape(), Place::Cuda(0));
  Tensor back(DataType::kFloat32, big.shape());
  auto event = producer.NewEvent();
  CopyBetweenPlaces(device.raw_data(), device.place(), big.raw_data(), Place::Cpu(), n, &producer);
  producer.Record(*event);
  consumer.Wait(*event);
  CopyBetweenPlaces(back.raw_data(), Place::Cpu(), device.raw_data(), device.place(), n, &consumer);
  consumer.Synchronize();
  EXPECT_TRUE(event->Query());
  EXPECT_EQ(back.data<float>()[0], 1.0f);
  EXPECT_EQ(back.data<float>()[n / 4 - 1], 1.0f);
}

// A check queued from a launch (a kernel's look at what its device code
// found) runs when the stream is synchronized, after the work before it, not
// when queued; what it throws comes back from that Synchronize, once.
TEST(CudaDeviceTest, ChecksQueuedInALaunchRunAtTheStreamsSynchronize) {
  REQUIRE_CUDA_DEVICE();
  CudaStream stream(0, "cuda:0 compute");
  const int64_t n = 16 << 20;
  Tensor host(DataType::kFloat32, {n});
  host.Fill(2.0);
  Tensor device(DataType::kFloat32, host.shape(), Place::Cuda(0));
  bool ran = false;
  float last = 0;
  stream.Launch([&] {
    CopyBetweenPlaces(device.raw_data(), device.place(), host.raw_data(), Place::Cpu(),
                      static_cast<size_t>(n) * 4, &stream);
    CudaStream::AtSynchronize([&] {
      ran = true;
      CheckCuda(
          cudaMemcpy(&last, device.data<float>() + n - 1, sizeof(last), cudaMemcpyDeviceToHost),
          "copy back");
      throw Error(ErrorCode::kInvalidArgument, "Label of row 3 is 7, outside [0, 5)");
    });
  });
  EXPECT_FALSE(ran);
  try {
    stream.Synchronize();
    FAIL() << "the check's error did not come back";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("row 3"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(ran);
  EXPECT_EQ(last, 2.0f);
  EXPECT_NO_THROW(stream.Synchronize());  // reported once
  bool at_once = false;                   // outside a launch: run at once
  CudaStream::AtSynchronize([&] { at_once = true; });
  EXPECT_TRUE(at_once);
}

}  // namespace
}  // namespace rill
