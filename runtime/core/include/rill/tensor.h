// Tensor: a typed, shaped view of a reference-counted, 64-byte aligned buffer.
// Copies of a Tensor share the buffer (like a shared_ptr); Slice() makes a
// zero-copy view of rows [begin, end) along dim 0. A Tensor object itself is
// not thread-safe; distinct Tensors sharing a buffer may be read concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "rill/data_type.h"
#include "rill/error.h"
#include "rill/place.h"
#include "rill/shape.h"

namespace rill {

// A block of memory on a place. Owned through shared_ptr by the tensors that view it.
class Buffer {
 public:
  static constexpr size_t kAlignment = 64;
  Buffer(size_t bytes, Place place);
  // Host memory this buffer does not own (an embedding program's array, fed
  // without a copy): `release` runs, on whichever thread drops the last view,
  // instead of a free.
  Buffer(void* data, size_t bytes, std::function<void()> release);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Place place() const { return place_; }
  bool foreign() const { return static_cast<bool>(release_); }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Place place_;
  std::function<void()> release_;  // set for foreign memory
};

class Tensor {
 public:
  Tensor() = default;
  // Allocates an uninitialised tensor.
  Tensor(DataType dtype, Shape shape, Place place = Place::Cpu());
  // A tensor over host memory it does not own, without a copy: `data` holds
  // NumElements(shape) values of dtype, suitably aligned for it, and must
  // stay valid (and unchanged while a step reads it) until `release` runs,
  // when no tensor views it any more. Allocate never writes into such memory:
  // a kernel that outputs to the variable gets a buffer of its own.
  static Tensor Wrap(DataType dtype, Shape shape, void* data, std::function<void()> release);

  // -- shape and type --------------------------------------------------------
  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const;
  int64_t numel() const { return numel_; }
  size_t bytes() const { return static_cast<size_t>(numel_) * SizeOf(dtype_); }
  Place place() const { return place_; }
  // True once memory is attached (a default-constructed Tensor has none).
  bool initialized() const { return buffer_ != nullptr; }
  // True when another tensor views the same buffer (a copy, a slice, a
  // message being sent from it).
  bool shares_buffer() const;

  // -- element access --------------------------------------------------------
  // Typed pointers; throw kInvalidArgument when T does not match dtype().
  template <class T>
  const T* data() const {
    CheckType(DataTypeOf<T>());
    return static_cast<const T*>(raw_data());
  }
  template <class T>
  T* mutable_data() {
    CheckType(DataTypeOf<T>());
    return static_cast<T*>(raw_data());
  }
  const void* raw_data() const;
  void* raw_data();

  // -- (re)allocation --------------------------------------------------------
  // Makes this tensor a dtype/shape tensor with memory of its own. Keeps the
  // current buffer when it is large enough and no other tensor shares it, so
  // kernels writing the same output every step do not allocate.
  void Allocate(DataType dtype, const Shape& shape, Place place = Place::Cpu());
  template <class T>
  T* Allocate(const Shape& shape) {
    Allocate(DataTypeOf<T>(), shape);
    return mutable_data<T>();
  }
  // Same elements, new shape (same element count). Shares the buffer.
  Tensor Reshaped(const Shape& shape) const;
  // Rows [begin, end) of dim 0, sharing the buffer.
  Tensor Slice(int64_t begin, int64_t end) const;
  // `shape` elements of `dtype` from byte `byte_offset` of this tensor's
  // elements, sharing the buffer (a received frame cut into its values).
  // Throws kOutOfRange when they do not fit, kInvalidArgument when the offset
  // is not a multiple of the element size.
  Tensor View(DataType dtype, const Shape& shape, size_t byte_offset) const;
  // Points this tensor at other's memory (no copy).
  void ShareDataWith(const Tensor& other) { *this = other; }
  // Deep copy with its own buffer.
  Tensor Clone() const;
  // A copy on `place` (host memory or a device's), made before returning.
  Tensor CopyTo(Place place) const;
  // Copies other's elements into this tensor, allocating as needed.
  void CopyFrom(const Tensor& other);
  // Sets every element to `value` converted to dtype().
  void Fill(double value);

  // Element i converted to double (tests and printing; slow).
  double GetAsDouble(int64_t i) const;
  // "float32[2, 3]"
  std::string Describe() const;

 private:
  void CheckType(DataType requested) const;

  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;  // bytes into buffer_
  DataType dtype_ = DataType::kFloat32;
  Shape shape_;
  int64_t numel_ = 0;
  Place place_;
};

}  // namespace rill
