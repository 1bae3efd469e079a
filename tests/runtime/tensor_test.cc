#include "rill/tensor.h"

#include <gtest/gtest.h>

namespace rill {
namespace {

TEST(TensorTest, BufferIsSixtyFourByteAligned) {
  Tensor t(DataType::kFloat32, {3, 5});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  EXPECT_EQ(t.numel(), 15);
  EXPECT_EQ(t.bytes(), 60u);
}

TEST(TensorTest, SliceSharesMemoryAlongDimZero) {
  Tensor t(DataType::kInt32, {4, 2});
  for (int i = 0; i < 8; ++i) t.mutable_data<int32_t>()[i] = i;
  Tensor s = t.Slice(1, 3);
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  EXPECT_EQ(s.data<int32_t>()[0], 2);
  s.mutable_data<int32_t>()[0] = 42;
  EXPECT_EQ(t.data<int32_t>()[2], 42);
  EXPECT_THROW(t.Slice(3, 5), Error);
}

TEST(TensorTest, AllocateReusesAnUnsharedBuffer) {
  Tensor t(DataType::kFloat32, {100});
  const void* before = t.raw_data();
  t.Allocate(DataType::kFloat32, {10, 10});
  EXPECT_EQ(t.raw_data(), before);
  Tensor view = t;  // a second owner: the buffer may no longer be overwritten in place
  t.Allocate(DataType::kFloat32, {10, 10});
  EXPECT_NE(t.raw_data(), view.raw_data());
}

TEST(TensorTest, AWrappedArrayIsViewedAndReleasedOnceWhenTheLastViewGoes) {
  double values[6] = {1, 2, 3, 4, 5, 6};
  int released = 0;
  {
    Tensor t = Tensor::Wrap(DataType::kFloat64, {3, 2}, values, [&] { ++released; });
    EXPECT_EQ(t.data<double>(), values);
    Tensor rows = t.Slice(1, 3);
    EXPECT_EQ(rows.data<double>()[0], 3);
    t = Tensor();
    EXPECT_EQ(released, 0);  // the slice still views it
  }
  EXPECT_EQ(released, 1);
}

TEST(TensorTest, AllocateNeverWritesIntoWrappedMemory) {
  float values[4] = {1, 2, 3, 4};
  int released = 0;
  Tensor t = Tensor::Wrap(DataType::kFloat32, {4}, values, [&] { ++released; });
  float* fresh = t.Allocate<float>({4});
  EXPECT_NE(fresh, values);
  fresh[0] = 9;
  EXPECT_EQ(values[0], 1);
  EXPECT_EQ(released, 1);  // the tensor let go of the wrapped memory
}

TEST(TensorTest, WrongTypeAccessIsAnError) {
  Tensor t(DataType::kFloat32, {2});
  EXPECT_THROW(t.data<double>(), Error);
  Tensor empty;
  EXPECT_THROW(empty.raw_data(), Error);
}

}  // namespace
}  // namespace rill
