// CPU/CUDA agreement cases (op_agreement_test.cc): each group of CUDA
// kernels lists its cases in a file of its own (cases_<group>.cc).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "proto/program.pb.h"
#include "runtime/tensor.h"

namespace rill {

struct Case {
  std::string type;
  std::map<std::string, Tensor> inputs;  // slot -> value (one variable per slot)
  std::vector<std::string> outputs;      // slots
  double atol = 1e-6;                    // |cpu - cuda| <= atol + rtol * |cpu|
  double rtol = 1e-5;
  std::vector<std::pair<std::string, proto::Attr>> attrs = {};
};

// A float attribute named `name`, for Case::attrs.
proto::Attr FloatAttr(const std::string& name, float value);
proto::Attr IntAttr(const std::string& name, int64_t value);

std::vector<Case> ActivationCases();  // cases_activation.cc
std::vector<Case> UnaryCases();       // cases_unary.cc
std::vector<Case> OptimizerCases();   // cases_optimizer.cc
std::vector<Case> TensorCases();      // cases_tensor.cc
std::vector<Case> BinaryCases();      // cases_binary.cc
std::vector<Case> ReduceCases();      // cases_reduce.cc
std::vector<Case> SoftmaxCases();     // cases_softmax.cc

}  // namespace rill
