#include "rill/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "rill/device_memory.h"
#include "runtime/core/buffer_pool.h"

namespace rill {

Buffer::Buffer(size_t bytes, Place place) : bytes_(bytes), place_(place) {
  data_ = place.host_memory() ? BufferPool::Instance().Allocate(bytes)
                              : AllocateDeviceMemory(place, bytes);
}

Buffer::Buffer(void* data, size_t bytes, std::function<void()> release)
    : data_(data), bytes_(bytes), place_(Place::Cpu()), release_(std::move(release)) {
  RILL_CHECK(release_ != nullptr, kInvalidArgument, "foreign memory needs a release function");
}

Buffer::~Buffer() {
  if (release_) {
    release_();
  } else if (place_.host_memory()) {
    BufferPool::Instance().Free(data_, bytes_);
  } else {
    FreeDeviceMemory(place_, data_, bytes_);
  }
}

Tensor::Tensor(DataType dtype, Shape shape, Place place) { Allocate(dtype, shape, place); }

Tensor Tensor::Wrap(DataType dtype, Shape shape, void* data, std::function<void()> release) {
  Tensor t;
  t.numel_ = NumElements(shape);
  const size_t bytes = static_cast<size_t>(t.numel_) * SizeOf(dtype);
  RILL_CHECK(data != nullptr || bytes == 0, kInvalidArgument, "no memory to wrap for ",
             DataTypeName(dtype), ShapeToString(shape));
  t.buffer_ = std::make_shared<Buffer>(data, bytes, std::move(release));
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.place_ = Place::Cpu();
  return t;
}

int64_t Tensor::dim(int i) const {
  RILL_CHECK(i >= 0 && i < rank(), kOutOfRange, "dim ", i, " of tensor ", Describe());
  return shape_[i];
}

const void* Tensor::raw_data() const {
  RILL_CHECK(buffer_ != nullptr, kInvalidArgument, "tensor has no memory (never written)");
  return static_cast<const char*>(buffer_->data()) + offset_;
}

void* Tensor::raw_data() {
  RILL_CHECK(buffer_ != nullptr, kInvalidArgument, "tensor has no memory (never written)");
  return static_cast<char*>(buffer_->data()) + offset_;
}

void Tensor::CheckType(DataType requested) const {
  RILL_CHECK(requested == dtype_, kInvalidArgument, "tensor ", Describe(), " accessed as ",
             DataTypeName(requested));
}

namespace {

// Whether this tensor is the buffer's only owner, ordered after the last use
// by any owner that let go of it on another thread (a fetched tensor the
// caller has read and dropped): use_count() alone reads the count without
// ordering, so the buffer could be written before those reads are seen to
// have ended. Taking a reference is an acquire-release increment of the
// count (libstdc++), which reads the latest count and synchronizes with
// every release of a reference before it.
bool SoleOwner(const std::shared_ptr<Buffer>& buffer) {
  if (buffer == nullptr || buffer.use_count() != 1) return false;
  const std::shared_ptr<Buffer> probe = buffer;
  return probe.use_count() == 2;
}

}  // namespace

bool Tensor::shares_buffer() const { return buffer_ != nullptr && !SoleOwner(buffer_); }

void Tensor::Allocate(DataType dtype, const Shape& shape, Place place) {
  const int64_t numel = NumElements(shape);
  const size_t needed = static_cast<size_t>(numel) * SizeOf(dtype);
  const bool reusable = SoleOwner(buffer_) && offset_ == 0 && !buffer_->foreign() &&
                        buffer_->place() == place && buffer_->bytes() >= needed;
  if (!reusable) buffer_ = std::make_shared<Buffer>(needed, place);
  offset_ = 0;
  dtype_ = dtype;
  shape_ = shape;
  numel_ = numel;
  place_ = place;
}

Tensor Tensor::Reshaped(const Shape& shape) const {
  RILL_CHECK(NumElements(shape) == numel_, kInvalidArgument, "cannot reshape ", Describe(), " to ",
             ShapeToString(shape));
  Tensor out = *this;
  out.shape_ = shape;
  return out;
}

Tensor Tensor::Slice(int64_t begin, int64_t end) const {
  RILL_CHECK(rank() >= 1, kInvalidArgument, "cannot slice a scalar tensor");
  RILL_CHECK(0 <= begin && begin <= end && end <= shape_[0], kOutOfRange, "slice [", begin, ", ",
             end, ") of tensor ", Describe());
  Tensor out = *this;
  const int64_t row = numel_ / (shape_[0] == 0 ? 1 : shape_[0]);
  out.offset_ = offset_ + static_cast<size_t>(begin * row) * SizeOf(dtype_);
  out.shape_[0] = end - begin;
  out.numel_ = (end - begin) * row;
  return out;
}

Tensor Tensor::View(DataType dtype, const Shape& shape, size_t byte_offset) const {
  RILL_CHECK(buffer_ != nullptr, kInvalidArgument, "a view of a tensor without memory");
  const int64_t numel = NumElements(shape);
  const size_t bytes = static_cast<size_t>(numel) * SizeOf(dtype);
  RILL_CHECK(byte_offset <= this->bytes() && bytes <= this->bytes() - byte_offset, kOutOfRange,
             DataTypeName(dtype), ShapeToString(shape), " at byte ", byte_offset,
             " does not fit in tensor ", Describe());
  RILL_CHECK(byte_offset % SizeOf(dtype) == 0, kInvalidArgument, DataTypeName(dtype),
             " values cannot start at byte ", byte_offset, " of tensor ", Describe());
  Tensor out = *this;
  out.offset_ = offset_ + byte_offset;
  out.dtype_ = dtype;
  out.shape_ = shape;
  out.numel_ = numel;
  return out;
}

Tensor Tensor::Clone() const {
  Tensor out;
  out.CopyFrom(*this);
  return out;
}

void Tensor::CopyFrom(const Tensor& other) {
  if (&other == this) return;
  Allocate(other.dtype_, other.shape_, other.place_);
  if (other.numel_ == 0) return;
  if (place_.host_memory()) {
    std::memcpy(raw_data(), other.raw_data(), other.bytes());
  } else {
    CopyBetweenPlaces(raw_data(), place_, other.raw_data(), other.place_, other.bytes());
  }
}

Tensor Tensor::CopyTo(Place place) const {
  Tensor out(dtype_, shape_, place);
  if (numel_ > 0) CopyBetweenPlaces(out.raw_data(), place, raw_data(), place_, bytes());
  return out;
}

void Tensor::Fill(double value) {
  VisitDataType(dtype_, [&]<class T>() {
    T* p = mutable_data<T>();
    const T v = static_cast<T>(value);
    for (int64_t i = 0; i < numel_; ++i) p[i] = v;
  });
}

double Tensor::GetAsDouble(int64_t i) const {
  RILL_CHECK(0 <= i && i < numel_, kOutOfRange, "element ", i, " of tensor ", Describe());
  return VisitDataType(dtype_, [&]<class T>() { return static_cast<double>(data<T>()[i]); });
}

std::string Tensor::Describe() const { return StrCat(DataTypeName(dtype_), ShapeToString(shape_)); }

}  // namespace rill
