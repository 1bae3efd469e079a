// Element types of tensors, their sizes and names, and a visitor that turns a
// run-time DataType into a compile-time C++ type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "rill/error.h"
#include "rill/proto/program.pb.h"

namespace rill {

enum class DataType { kFloat32, kFloat64, kInt32, kInt64 };

size_t SizeOf(DataType type);
const char* DataTypeName(DataType type);
// Accepts "float32", "float64", "int32", "int64" (and "float", "double").
DataType ParseDataType(const std::string& name);
proto::DataType ToProto(DataType type);
// Throws kInvalidArgument for DT_INVALID or an unknown value.
DataType FromProto(proto::DataType type);

template <class T>
constexpr DataType DataTypeOf();
template <>
constexpr DataType DataTypeOf<float>() {
  return DataType::kFloat32;
}
template <>
constexpr DataType DataTypeOf<double>() {
  return DataType::kFloat64;
}
template <>
constexpr DataType DataTypeOf<int32_t>() {
  return DataType::kInt32;
}
template <>
constexpr DataType DataTypeOf<int64_t>() {
  return DataType::kInt64;
}

// Calls visitor.template operator()<T>() with T the C++ type of `type`:
//   VisitDataType(t, [&]<class T>() { Compute<T>(...); });
template <class Visitor>
decltype(auto) VisitDataType(DataType type, Visitor&& visitor) {
  switch (type) {
    case DataType::kFloat32: return visitor.template operator()<float>();
    case DataType::kFloat64: return visitor.template operator()<double>();
    case DataType::kInt32: return visitor.template operator()<int32_t>();
    case DataType::kInt64: return visitor.template operator()<int64_t>();
  }
  Fail(ErrorCode::kInternal, "bad data type ", static_cast<int>(type));
}

// Like VisitDataType, for kernels defined on float32 and float64 only.
template <class Visitor>
decltype(auto) VisitFloatType(DataType type, Visitor&& visitor) {
  switch (type) {
    case DataType::kFloat32: return visitor.template operator()<float>();
    case DataType::kFloat64: return visitor.template operator()<double>();
    default: break;
  }
  Fail(ErrorCode::kUnimplemented, "kernel defined for float32 and float64 only, got ",
       DataTypeName(type));
}

}  // namespace rill
