#include "tests/actors/random_program.h"

#include <algorithm>
#include <random>

#include "rill/op_desc.h"
#include "rill/validate.h"
#include "tests/testing/gradient_check.h"

namespace rill::testing {
namespace {

constexpr int64_t kN = 4;

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  RandomProgram Make(int iterations) {
    RandomProgram out;
    block_ = out.program.add_blocks();
    block_->set_idx(0);
    block_->set_parent_idx(-1);
    const int inputs = Uniform(1, 3);
    const int params = Uniform(0, 3);
    for (int i = 0; i < inputs; ++i) Declare("in" + std::to_string(i), {kN, kN}, false);
    for (int i = 0; i < params; ++i) Declare("p" + std::to_string(i), {kN, kN}, true);
    const int ops = Uniform(4, 40);
    for (int i = 0; i < ops; ++i) AddOp();
    // Fetch a few variables: anything declared may have been written.
    const int fetches = Uniform(1, 4);
    for (int i = 0; i < fetches; ++i) {
      const auto& v = block_->vars(Uniform(0, block_->vars_size() - 1));
      out.fetches.push_back(v.name());
    }
    for (int it = 0; it < iterations; ++it) {
      FeedList feeds;
      for (int i = 0; i < inputs; ++i) {
        feeds.push_back(
            {"in" + std::to_string(i), RandomTensor({kN, kN}, rng_(), -1, 1, DataType::kFloat32)});
      }
      out.feeds.push_back(feeds);
    }
    for (int i = 0; i < params; ++i) {
      out.state.push_back(
          {"p" + std::to_string(i), RandomTensor({kN, kN}, rng_(), -0.5, 0.5, DataType::kFloat32)});
    }
    out.writes_state = writes_state_;
    Validate(out.program);
    return out;
  }

 private:
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  void Declare(const std::string& name, const Shape& shape, bool persistable) {
    auto* v = block_->add_vars();
    v->set_name(name);
    v->set_kind(proto::DENSE_TENSOR);
    v->set_dtype(proto::FLOAT32);
    for (int64_t d : shape) v->add_shape(d);
    v->set_persistable(persistable);
    (shape.size() == 1 ? scalars_ : squares_).push_back(name);
    if (persistable) persistables_.push_back(name);
  }

  bool IsPersistable(const std::string& name) const {
    return std::find(persistables_.begin(), persistables_.end(), name) != persistables_.end();
  }

  const std::string& AnySquare() {
    return squares_[Uniform(0, static_cast<int>(squares_.size()) - 1)];
  }

  // Where a square result goes: often a variable that exists (hazards), else a
  // new one. Ops that cannot compute in place (products, transpose) pass the
  // inputs the output must differ from.
  std::string SquareOutput(const std::string& first_input,
                           const std::vector<std::string>& not_these = {}) {
    if (not_these.empty() && Chance(0.15)) {
      if (IsPersistable(first_input)) writes_state_ = true;
      return first_input;  // in place
    }
    if (Chance(0.3)) {
      const std::string target = AnySquare();
      if (std::find(not_these.begin(), not_these.end(), target) == not_these.end()) {
        if (IsPersistable(target)) writes_state_ = true;
        return target;
      }
    }
    const std::string name = "t" + std::to_string(counter_++);
    Declare(name, {kN, kN}, false);
    return name;
  }

  std::string ScalarOutput() {
    if (!scalars_.empty() && Chance(0.3))
      return scalars_[Uniform(0, static_cast<int>(scalars_.size()) - 1)];
    const std::string name = "s" + std::to_string(counter_++);
    Declare(name, {1}, false);
    return name;
  }

  proto::OpDesc* NewOp(const std::string& type) {
    auto* op = block_->add_ops();
    op->set_type(type);
    return op;
  }

  void AddOp() {
    static const char* kBinary[] = {"elementwise_add", "elementwise_sub", "elementwise_mul",
                                    "elementwise_max"};
    static const char* kUnary[] = {"scale", "relu", "tanh", "sigmoid", "square", "softmax"};
    const int kind = Uniform(0, 6);
    if (kind <= 1) {  // binary, Y square or one element
      const std::string x = AnySquare();
      const std::string y = !scalars_.empty() && Chance(0.3)
                                ? scalars_[Uniform(0, static_cast<int>(scalars_.size()) - 1)]
                                : AnySquare();
      auto* op = NewOp(kBinary[Uniform(0, 3)]);
      SetInput(op, "X", {x});
      SetInput(op, "Y", {y});
      SetOutput(op, "Out", {SquareOutput(x)});
    } else if (kind == 2) {
      const std::string x = AnySquare();
      const std::string type = kUnary[Uniform(0, 5)];
      auto* op = NewOp(type);
      SetInput(op, "X", {x});
      if (type == "scale") SetAttr(op, "scale", static_cast<float>(Uniform(-3, 3)) * 0.5f);
      SetOutput(op, "Out", {SquareOutput(x)});
    } else if (kind == 3) {  // products
      const std::string x = AnySquare();
      const std::string y = AnySquare();
      if (Chance(0.5)) {
        auto* op = NewOp("matmul");
        SetInput(op, "X", {x});
        SetInput(op, "Y", {y});
        SetAttr(op, "transpose_X", Chance(0.5));
        SetAttr(op, "transpose_Y", Chance(0.5));
        SetOutput(op, "Out", {SquareOutput(x, {x, y})});
      } else {
        auto* op = NewOp("mul");
        SetInput(op, "X", {x});
        SetInput(op, "Y", {y});
        SetOutput(op, "Out", {SquareOutput(x, {x, y})});
      }
    } else if (kind == 4) {  // n-ary sum, inputs may repeat
      std::vector<std::string> xs;
      const int n = Uniform(2, 4);
      for (int i = 0; i < n; ++i) xs.push_back(AnySquare());
      auto* op = NewOp("sum");
      SetInput(op, "X", xs);
      SetOutput(op, "Out", {SquareOutput(xs[0])});
    } else if (kind == 5) {  // reductions to one element
      auto* op = NewOp(Chance(0.5) ? "mean" : "squared_l2_norm");
      SetInput(op, "X", {AnySquare()});
      SetOutput(op, "Out", {ScalarOutput()});
    } else {
      const std::string x = AnySquare();
      auto* op = NewOp("transpose");
      SetInput(op, "X", {x});
      SetAttr(op, "axis", std::vector<int64_t>{1, 0});
      SetOutput(op, "Out", {SquareOutput(x, {x})});
    }
  }

  std::mt19937_64 rng_;
  proto::BlockDesc* block_ = nullptr;
  std::vector<std::string> squares_;
  std::vector<std::string> scalars_;
  std::vector<std::string> persistables_;
  int counter_ = 0;
  bool writes_state_ = false;
};

}  // namespace

RandomProgram MakeRandomProgram(uint64_t seed, int iterations) {
  return Generator(seed).Make(iterations);
}

}  // namespace rill::testing
