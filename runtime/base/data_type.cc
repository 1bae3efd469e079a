#include "rill/data_type.h"

namespace rill {

size_t SizeOf(DataType type) {
  switch (type) {
    case DataType::kFloat32: return 4;
    case DataType::kFloat64: return 8;
    case DataType::kInt32: return 4;
    case DataType::kInt64: return 8;
  }
  return 0;
}

const char* DataTypeName(DataType type) {
  switch (type) {
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
  }
  return "invalid";
}

DataType ParseDataType(const std::string& name) {
  if (name == "float32" || name == "float") return DataType::kFloat32;
  if (name == "float64" || name == "double") return DataType::kFloat64;
  if (name == "int32") return DataType::kInt32;
  if (name == "int64") return DataType::kInt64;
  Fail(ErrorCode::kInvalidArgument, "unknown data type \"", name,
       "\" (expected float32, float64, int32 or int64)");
}

proto::DataType ToProto(DataType type) {
  switch (type) {
    case DataType::kFloat32: return proto::FLOAT32;
    case DataType::kFloat64: return proto::FLOAT64;
    case DataType::kInt32: return proto::INT32;
    case DataType::kInt64: return proto::INT64;
  }
  return proto::DT_INVALID;
}

DataType FromProto(proto::DataType type) {
  switch (type) {
    case proto::FLOAT32: return DataType::kFloat32;
    case proto::FLOAT64: return DataType::kFloat64;
    case proto::INT32: return DataType::kInt32;
    case proto::INT64: return DataType::kInt64;
    default: break;
  }
  Fail(ErrorCode::kInvalidArgument, "invalid data type value ", static_cast<int>(type));
}

}  // namespace rill
