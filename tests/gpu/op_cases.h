// CPU/CUDA agreement cases (op_agreement_test.cc): each group of CUDA
// kernels lists its cases in a file of its own (cases_<group>.cc).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "rill/proto/program.pb.h"
#include "rill/tensor.h"

namespace rill {

struct Case {
  std::string type;
  std::map<std::string, Tensor> inputs;  // slot -> value (one variable per slot)
  std::vector<std::string> outputs;      // slots
  double atol = 1e-6;                    // |cpu - cuda| <= atol + rtol * |cpu|
  double rtol = 1e-5;
  std::vector<std::pair<std::string, proto::Attr>> attrs = {};
  // Slots bound to several variables (duplicable ones, or gradients paired
  // with their variables by name): slot -> its variables in order, each a
  // name and a value. A Tensor() binds a variable that holds no value.
  std::map<std::string, std::vector<std::pair<std::string, Tensor>>> input_lists = {};
  // Output slots bound to several variables: slot -> their names.
  std::map<std::string, std::vector<std::string>> output_lists = {};
};

// The variables a case's outputs are bound to: "out_<slot>" for each of
// Case::outputs, then the names in Case::output_lists.
std::vector<std::string> OutputVariables(const Case& c);

// Attributes named `name`, for Case::attrs (case_attrs.cc).
proto::Attr FloatAttr(const std::string& name, float value);
proto::Attr IntAttr(const std::string& name, int64_t value);
proto::Attr IntsAttr(const std::string& name, const std::vector<int64_t>& values);
proto::Attr BoolAttr(const std::string& name, bool value);
proto::Attr StringAttr(const std::string& name, const std::string& value);

std::vector<Case> ActivationCases();        // cases_activation.cc
std::vector<Case> UnaryCases();             // cases_unary.cc
std::vector<Case> OptimizerCases();         // cases_optimizer.cc
std::vector<Case> TensorCases();            // cases_tensor.cc
std::vector<Case> BinaryCases();            // cases_binary.cc
std::vector<Case> ReduceCases();            // cases_reduce.cc
std::vector<Case> SoftmaxCases();           // cases_softmax.cc
std::vector<Case> ShapeCases();             // cases_shape.cc
std::vector<Case> TopKCases();              // cases_top_k.cc
std::vector<Case> EmbeddingDropoutCases();  // cases_embedding_dropout.cc
std::vector<Case> RandomCases();            // cases_random.cc
std::vector<Case> GemmCases();              // cases_gemm.cc
std::vector<Case> NormCompareCases();       // cases_norm_compare.cc
std::vector<Case> ConvCases();              // cases_conv.cc
std::vector<Case> PoolCases();              // cases_pool.cc
std::vector<Case> NormCases();              // cases_norm.cc
std::vector<Case> RnnCases();               // cases_rnn.cc

}  // namespace rill
