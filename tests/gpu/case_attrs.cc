// The attributes of agreement cases (op_cases.h).
#include "tests/gpu/op_cases.h"

namespace rill {
namespace {

proto::Attr Named(const std::string& name) {
  proto::Attr attr;
  attr.set_name(name);
  return attr;
}

}  // namespace

proto::Attr FloatAttr(const std::string& name, float value) {
  proto::Attr attr = Named(name);
  attr.set_f(value);
  return attr;
}

proto::Attr IntAttr(const std::string& name, int64_t value) {
  proto::Attr attr = Named(name);
  attr.set_i(value);
  return attr;
}

proto::Attr IntsAttr(const std::string& name, const std::vector<int64_t>& values) {
  proto::Attr attr = Named(name);
  auto* ints = attr.mutable_ints();  // set even when empty
  for (int64_t v : values) ints->add_values(v);
  return attr;
}

proto::Attr BoolAttr(const std::string& name, bool value) {
  proto::Attr attr = Named(name);
  attr.set_b(value);
  return attr;
}

proto::Attr StringAttr(const std::string& name, const std::string& value) {
  proto::Attr attr = Named(name);
  attr.set_s(value);
  return attr;
}

}  // namespace rill
