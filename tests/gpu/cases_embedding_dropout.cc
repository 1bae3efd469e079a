// Agreement cases of lookup_table, lookup_table_grad, dropout and dropout_grad's
// CUDA kernels (ops/nn/embedding_dropout_cuda.cu), and the checks a case
// cannot make, as tests of their own (each skips without a device):
// - the sparse gradient (is_sparse) is selected rows, which a case cannot
//   fetch: the same rows and height, the same values on the device;
// - an out-of-range id fails on cuda:0 with the CPU's error, word for word;
// - ops drawing from their generator (dropout, uniform_random,
//   gaussian_random) agree run after run, one KernelContext kept per place as
//   an executor keeps it;
// - a program run by the reference executor on cuda:0 (startup initialisers
//   with seed 0 and a seed attribute, embedding lookups, dropout) gives the
//   CPU's numbers at every step.
//
// All exact (atol 0, rtol 0): the kernels gather, copy, and multiply once per
// element (Mul, rounded on its own); the dense gradient adds a row's Out@GRAD
// rows in the CPU's order (the ids' order) from 0; the dropout mask is drawn on
// the host from the op's generator with the CPU's draws. The tests compare bit
// patterns (memcmp), so a -0 for a +0 fails too.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rill/builder.h"
#include "rill/device.h"
#include "rill/executor.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"
#include "rill/scope.h"
#include "rill/selected_rows.h"
#include "runtime/device/cuda_stream.h"
#include "tests/gpu/op_cases.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using Attrs = std::vector<std::pair<std::string, proto::Attr>>;
using testing::MakeTensor;
using testing::RandomTensor;

// n ids in [0, rows) as a [n, 1] tensor (or [n] when flat), repeating: every
// row is picked about n / rows times, in no particular order.
Tensor Ids(int64_t n, int64_t rows, uint64_t salt, bool flat = false) {
  std::vector<int64_t> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    values[static_cast<size_t>(i)] = static_cast<int64_t>((i * 7919 + salt * 31 + 3) % rows);
  }
  return MakeTensor<int64_t>(flat ? Shape{n} : Shape{n, 1}, values);
}

// 1000 ids, nine in ten of them row 7: one long sum per column, whose last
// bits show any other order of additions.
Tensor HotIds() {
  std::vector<int64_t> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = i % 10 == 3 ? int64_t(i % 50) : 7;
  return MakeTensor<int64_t>({1000, 1}, values);
}

Case Lookup(const Tensor& w, const Tensor& ids, int64_t padding_idx) {
  return {"lookup_table",
          {{"W", w}, {"Ids", ids}},
          {"Out"},
          0,
          0,
          {{"padding_idx", IntAttr("padding_idx", padding_idx)}}};
}

// Out@GRAD of lookup_table(w, ids): [ids..., width] values in [-1, 1).
Tensor OutGrad(const Tensor& w, const Tensor& ids, uint64_t seed) {
  Shape shape = ids.shape();
  if (shape.size() >= 2) {
    shape.back() = w.dim(1);
  } else {
    shape.push_back(w.dim(1));
  }
  return RandomTensor(shape, seed, -1, 1, w.dtype());
}

Case LookupGrad(const Tensor& w, const Tensor& ids, const Tensor* dy, int64_t padding_idx) {
  Case c{"lookup_table_grad",
         {{"W", w}, {"Ids", ids}},
         {"W@GRAD"},
         0,
         0,
         {{"padding_idx", IntAttr("padding_idx", padding_idx)}}};
  if (dy != nullptr) c.inputs["Out@GRAD"] = *dy;
  return c;
}

Case Dropout(const Tensor& x, float p, bool is_test, const std::string& implementation,
             std::vector<std::string> outputs = {"Out", "Mask"}) {
  return {"dropout",
          {{"X", x}},
          std::move(outputs),
          0,
          0,
          {{"dropout_prob", FloatAttr("dropout_prob", p)},
           {"is_test", BoolAttr("is_test", is_test)},
           {"seed", IntAttr("seed", 17)},
           {"dropout_implementation", StringAttr("dropout_implementation", implementation)}}};
}

// A dropout mask: 0 or `kept`, about one in three dropped.
Tensor MaskOf(const Shape& shape, double kept, DataType dtype) {
  Tensor m = RandomTensor(shape, 99, 0, 1, dtype);
  VisitFloatType(dtype, [&]<class T>() {
    T* v = m.mutable_data<T>();
    for (int64_t i = 0; i < m.numel(); ++i) v[i] = v[i] < T(1.0 / 3) ? T(0) : static_cast<T>(kept);
  });
  return m;
}

}  // namespace

std::vector<Case> EmbeddingDropoutCases() {
  constexpr DataType f32 = DataType::kFloat32;
  constexpr DataType f64 = DataType::kFloat64;
  const Tensor w = RandomTensor({50, 16}, 301, -1, 1, f32);
  const Tensor w64 = RandomTensor({50, 16}, 302);
  const Tensor big_w = RandomTensor({3000, 512}, 303, -1, 1, f32);
  const Tensor ids = Ids(40, 50, 1);
  const Tensor flat_ids = Ids(40, 50, 2, /*flat=*/true);
  const Tensor ids3 = Ids(10, 50, 3).Reshaped({2, 5, 1});
  const Tensor many_ids = Ids(200, 50, 4);
  const Tensor big_ids = Ids(1000, 3000, 5);
  const Tensor hot = HotIds();
  const Tensor no_ids(DataType::kInt64, {0, 1});
  std::vector<Case> cases = {
      // lookup_table: [N, 1], [N] and [2, 5, 1] ids, repeats, a padding row
      // that is picked, both types, a launch bigger than one grid, no ids.
      Lookup(w, ids, -1),
      Lookup(w64, flat_ids, 3),
      Lookup(w, ids3, Ids(10, 50, 3).data<int64_t>()[0]),
      Lookup(big_w, big_ids, 0),
      Lookup(w, no_ids, -1),
  };
  // lookup_table_grad, dense: repeated ids (each row about four times), a
  // padding row, one hot row picked 900 times, float64, no Out@GRAD (zeros),
  // no ids.
  const Tensor dy = OutGrad(w, many_ids, 311);
  const Tensor dy64 = OutGrad(w64, many_ids, 312);
  const Tensor dy_hot = OutGrad(w, hot, 313);
  const Tensor dy_flat = OutGrad(w, flat_ids, 314);
  const Tensor dy_big = OutGrad(big_w, big_ids, 315);
  const Tensor dy_none = OutGrad(w, no_ids, 316);
  cases.push_back(LookupGrad(w, many_ids, &dy, -1));
  cases.push_back(LookupGrad(w, many_ids, &dy, 3));
  cases.push_back(LookupGrad(w64, many_ids, &dy64, 7));
  cases.push_back(LookupGrad(w, hot, &dy_hot, -1));
  cases.push_back(LookupGrad(w, flat_ids, &dy_flat, -1));
  cases.push_back(LookupGrad(big_w, big_ids, &dy_big, -1));
  cases.push_back(LookupGrad(w, many_ids, nullptr, -1));
  cases.push_back(LookupGrad(w, no_ids, &dy_none, -1));

  // dropout: element counts of each remainder mod 3 (a random number gives
  // three draws), both implementations, p of 0 and 1, test mode with and
  // without Mask, more elements than one grid, none.
  const Tensor x = RandomTensor({37, 130}, 321, -1, 1, f32);  // 4810 = 1 mod 3
  const Tensor x64 = RandomTensor({1001}, 322);               // 2 mod 3
  const Tensor x3 = RandomTensor({4, 3}, 323, -1, 1, f32);    // 0 mod 3
  const Tensor big = RandomTensor({1100, 1000}, 324, -1, 1, f32);
  const Tensor empty(f32, {0, 5});
  for (const std::string impl : {"upscale_in_train", "downgrade_in_infer"}) {
    cases.push_back(Dropout(x, 0.5f, false, impl));
    cases.push_back(Dropout(x64, 0.3f, false, impl));
    cases.push_back(Dropout(x3, 0.7f, false, impl));
    cases.push_back(Dropout(x, 0.0f, false, impl));
    cases.push_back(Dropout(x, 1.0f, false, impl));
    cases.push_back(Dropout(x, 0.35f, true, impl));
    cases.push_back(Dropout(x64, 0.35f, true, impl));
    cases.push_back(Dropout(x, 0.35f, true, impl, {"Out"}));
  }
  cases.push_back(Dropout(big, 0.1f, false, "upscale_in_train"));
  cases.push_back(Dropout(empty, 0.5f, false, "upscale_in_train"));

  // dropout_grad: both types, no Out@GRAD (zeros), no elements.
  const Tensor mask = MaskOf(x.shape(), 2.0, f32);
  const Tensor mask64 = MaskOf(x64.shape(), 1.0 / 0.7, f64);
  const Tensor dout = RandomTensor(x.shape(), 331, -1, 1, f32);
  const Tensor dout64 = RandomTensor(x64.shape(), 332);
  cases.push_back({"dropout_grad", {{"Mask", mask}, {"Out@GRAD", dout}}, {"X@GRAD"}, 0, 0});
  cases.push_back({"dropout_grad", {{"Mask", mask64}, {"Out@GRAD", dout64}}, {"X@GRAD"}, 0, 0});
  cases.push_back({"dropout_grad", {{"Mask", mask}}, {"X@GRAD"}, 0, 0});
  cases.push_back({"dropout_grad", {{"Mask", empty}, {"Out@GRAD", empty}}, {"X@GRAD"}, 0, 0});
  return cases;
}

namespace {

// One op bound to a scope of its own on one place, with one KernelContext
// for all its runs (so its generator advances from run to run, as in an
// executor). Inputs are copied to the place.
class PlacedOp {
 public:
  PlacedOp(const std::string& type, const std::map<std::string, Tensor>& inputs,
           const std::vector<std::string>& outputs, const Attrs& attrs, Place place, uint64_t seed)
      : place_(place) {
    desc_.set_type(type);
    for (const auto& [slot, value] : inputs) {
      auto* in = desc_.add_inputs();
      in->set_name(slot);
      in->add_vars("in_" + slot);
      *scope_.Var("in_" + slot)->mutable_tensor() = value.CopyTo(place);
    }
    for (const std::string& slot : outputs) {
      auto* out = desc_.add_outputs();
      out->set_name(slot);
      out->add_vars("out_" + slot);
    }
    for (const auto& [name, value] : attrs) *desc_.add_attrs() = value;
    const OpSchema& schema = GetOpSchema(type);
    kernel_ = schema.FindKernel(place.kind);
    context_ = std::make_unique<KernelContext>(desc_, schema, &scope_, place, seed);
    if (!place.host_memory()) stream_ = std::make_unique<CudaStream>(place.device, "test stream");
  }

  // Runs the kernel (on the test stream for a device, waited for); throws
  // what the kernel throws.
  void Run() {
    ASSERT_NE(kernel_, nullptr) << desc_.type() << " has no kernel for " << place_.ToString();
    if (stream_ == nullptr) {
      (*kernel_)(*context_);
      return;
    }
    stream_->Launch([&] { (*kernel_)(*context_); });
    stream_->Synchronize();
  }

  // The error message the run fails with ("" when it does not fail).
  std::string RunError() {
    try {
      Run();
    } catch (const Error& e) {
      return e.message();
    }
    return "";
  }

  Tensor Output(const std::string& slot) const {
    return scope_.GetTensor("out_" + slot).CopyTo(Place::Cpu());
  }
  const SelectedRows& OutputRows(const std::string& slot) {
    return scope_.FindVar("out_" + slot)->selected_rows();
  }

 private:
  Place place_;
  proto::OpDesc desc_;
  Scope scope_;
  const KernelFn* kernel_ = nullptr;
  std::unique_ptr<KernelContext> context_;
  std::unique_ptr<CudaStream> stream_;
};

// Host tensors a (the CPU's) and b agree bit for bit.
void ExpectSameBits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  if (a.numel() == 0) return;
  if (std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0) return;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const size_t size = SizeOf(a.dtype());
    const auto* pa = static_cast<const char*>(a.raw_data()) + i * size;
    const auto* pb = static_cast<const char*>(b.raw_data()) + i * size;
    if (std::memcmp(pa, pb, size) != 0) {
      ADD_FAILURE() << what << "[" << i << "]: cpu " << a.GetAsDouble(i) << ", cuda "
                    << b.GetAsDouble(i);
      return;
    }
  }
}

#define RILL_SKIP_WITHOUT_CUDA()                                               \
  do {                                                                         \
    std::string why;                                                           \
    if (CudaDeviceCount(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why; \
  } while (0)

TEST(EmbeddingDropoutCudaTest, TheSparseGradientIsTheCpusSelectedRowsWithValuesOnTheDevice) {
  RILL_SKIP_WITHOUT_CUDA();
  const Tensor w = RandomTensor({50, 16}, 401, -1, 1, DataType::kFloat32);
  const Tensor w64 = RandomTensor({50, 16}, 402);
  const Tensor ids = Ids(40, 50, 6);
  const Tensor dy = OutGrad(w, ids, 403);
  const Tensor dy64 = OutGrad(w64, ids, 404);
  const Tensor all_padding = MakeTensor<int64_t>({3, 1}, {5, 5, 5});
  const Tensor dy_padding = OutGrad(w, all_padding, 405);
  struct Sparse {
    const char* name;
    std::map<std::string, Tensor> inputs;
    int64_t padding_idx;
  };
  const std::vector<Sparse> sparse = {
      {"repeats", {{"W", w}, {"Ids", ids}, {"Out@GRAD", dy}}, -1},
      {"padding", {{"W", w}, {"Ids", ids}, {"Out@GRAD", dy}}, Ids(40, 50, 6).data<int64_t>()[2]},
      {"float64", {{"W", w64}, {"Ids", ids}, {"Out@GRAD", dy64}}, 9},
      {"no Out@GRAD", {{"W", w}, {"Ids", ids}}, -1},
      {"every id padding", {{"W", w}, {"Ids", all_padding}, {"Out@GRAD", dy_padding}}, 5},
  };
  for (const Sparse& s : sparse) {
    SCOPED_TRACE(s.name);
    const Attrs attrs = {{"padding_idx", IntAttr("padding_idx", s.padding_idx)},
                         {"is_sparse", BoolAttr("is_sparse", true)}};
    PlacedOp cpu("lookup_table_grad", s.inputs, {"W@GRAD"}, attrs, Place::Cpu(), 1);
    PlacedOp gpu("lookup_table_grad", s.inputs, {"W@GRAD"}, attrs, Place::Cuda(0), 1);
    cpu.Run();
    gpu.Run();
    const SelectedRows& a = cpu.OutputRows("W@GRAD");
    const SelectedRows& b = gpu.OutputRows("W@GRAD");
    EXPECT_EQ(a.height, b.height);
    EXPECT_EQ(a.rows, b.rows);
    EXPECT_EQ(b.value.place(), Place::Cuda(0));
    ExpectSameBits(a.value, b.value.CopyTo(Place::Cpu()), "value");
  }
}

TEST(EmbeddingDropoutCudaTest, AnIdOutsideTheTableFailsWithTheCpusError) {
  RILL_SKIP_WITHOUT_CUDA();
  const Tensor w = RandomTensor({50, 16}, 411, -1, 1, DataType::kFloat32);
  const Tensor ids = MakeTensor<int64_t>({5, 1}, {1, 2, 3, 57, -1});
  const Tensor negative = MakeTensor<int64_t>({3}, {0, -4, 70});
  const Tensor dy = OutGrad(w, ids, 412);
  const Tensor dy_negative = OutGrad(w, negative, 413);
  struct Bad {
    const char* type;
    std::map<std::string, Tensor> inputs;
    bool is_sparse;
    const char* expected;  // a part of the message
  };
  const std::vector<Bad> bad = {
      {"lookup_table", {{"W", w}, {"Ids", ids}}, false, "Ids row 3 is 57"},
      {"lookup_table", {{"W", w}, {"Ids", negative}}, false, "Ids row 1 is -4"},
      {"lookup_table_grad", {{"W", w}, {"Ids", ids}, {"Out@GRAD", dy}}, false, "Ids row 3 is 57"},
      {"lookup_table_grad", {{"W", w}, {"Ids", ids}, {"Out@GRAD", dy}}, true, "Ids row 3 is 57"},
      {"lookup_table_grad",
       {{"W", w}, {"Ids", negative}, {"Out@GRAD", dy_negative}},
       true,
       "Ids row 1 is -4"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(std::string(b.type) + (b.is_sparse ? " (sparse)" : ""));
    const Attrs attrs = {{"is_sparse", BoolAttr("is_sparse", b.is_sparse)}};
    const std::vector<std::string> outputs = {b.type == std::string("lookup_table") ? "Out"
                                                                                    : "W@GRAD"};
    PlacedOp cpu(b.type, b.inputs, outputs, attrs, Place::Cpu(), 1);
    PlacedOp gpu(b.type, b.inputs, outputs, attrs, Place::Cuda(0), 1);
    const std::string cpu_error = cpu.RunError();
    EXPECT_NE(cpu_error.find(b.expected), std::string::npos) << cpu_error;
    EXPECT_EQ(gpu.RunError(), cpu_error);
  }
}

TEST(EmbeddingDropoutCudaTest, GeneratorsAdvanceAsOnTheCpuFromRunToRun) {
  RILL_SKIP_WITHOUT_CUDA();
  const Tensor x = RandomTensor({37, 130}, 421, -1, 1, DataType::kFloat32);
  proto::Attr shape;
  shape.set_name("shape");
  for (int64_t d : {31, 3}) shape.mutable_ints()->add_values(d);  // odd: gaussian drops one
  struct Drawing {
    const char* type;
    std::map<std::string, Tensor> inputs;
    std::vector<std::string> outputs;
    Attrs attrs;
  };
  const std::vector<Drawing> drawing = {
      {"dropout", {{"X", x}}, {"Out", "Mask"}, {{"dropout_prob", FloatAttr("dropout_prob", 0.4f)}}},
      {"uniform_random", {}, {"Out"}, {{"shape", shape}}},
      {"gaussian_random", {}, {"Out"}, {{"shape", shape}}},
  };
  for (const Drawing& d : drawing) {
    for (uint64_t seed : {uint64_t{1}, uint64_t{0x9e3779b97f4a7c15ULL}}) {
      SCOPED_TRACE(StrCat(d.type, ", seed ", seed));
      PlacedOp cpu(d.type, d.inputs, d.outputs, d.attrs, Place::Cpu(), seed);
      PlacedOp gpu(d.type, d.inputs, d.outputs, d.attrs, Place::Cuda(0), seed);
      Tensor first;
      for (int run = 0; run < 3; ++run) {
        cpu.Run();
        gpu.Run();
        for (const std::string& slot : d.outputs) {
          ExpectSameBits(cpu.Output(slot), gpu.Output(slot), StrCat(slot, " of run ", run));
        }
        // Each run draws anew.
        if (run == 0) first = cpu.Output(d.outputs[0]);
        if (run == 1) {
          EXPECT_NE(
              std::memcmp(first.raw_data(), cpu.Output(d.outputs[0]).raw_data(), first.bytes()), 0);
        }
      }
    }
  }
}

// A model's first steps on cuda:0 and on the CPU, through the reference
// executor: the startup program's initialisers (seed 0: derived from the
// program's seed) give the same parameters; each step looks up the same rows
// and drops the same elements (one dropout seeded from the program, one by
// its seed attribute).
TEST(EmbeddingDropoutCudaTest, AProgramOnCuda0StartsFromAndDropsWhatTheCpuDoes) {
  RILL_SKIP_WITHOUT_CUDA();
  Program main;
  Program startup;
  Builder b(&main, &startup, /*seed=*/20260101);
  const Var ids = b.Data("ids", {-1, 1}, DataType::kInt64);
  const Var embedded = b.Embedding(ids, 50, 8);  // XavierUniform: uniform_random
  b.Parameter("scale", {7, 5}, Initializer::Normal(0.5f, 2.0f),
              DataType::kFloat64);  // gaussian_random, 35 values
  const std::vector<Var> dropped =
      b.AppendOp("dropout", {{"X", {embedded}}}, {{"Out", 1}, {"Mask", 1}},
                 [](proto::OpDesc* op) { SetAttr(op, "dropout_prob", 0.3f); });
  const std::vector<Var> dropped_again = b.AppendOp(
      "dropout", {{"X", {dropped[0]}}}, {{"Out", 1}, {"Mask", 1}}, [](proto::OpDesc* op) {
        SetAttr(op, "dropout_prob", 0.6f);
        SetAttr(op, "seed", int64_t{12345});
        SetAttr(op, "dropout_implementation", "downgrade_in_infer");
      });
  const std::vector<std::string> fetches = {embedded.name, dropped[0].name, dropped[1].name,
                                            dropped_again[0].name, dropped_again[1].name};
  const Executor cpu;
  const Executor gpu(Place::Cuda(0));
  Scope cpu_scope;
  Scope gpu_scope;
  cpu.Run(startup.desc(), &cpu_scope);
  gpu.Run(startup.desc(), &gpu_scope);
  ASSERT_EQ(startup.desc().blocks(0).vars_size(), 2);  // the table and scale
  for (const auto& var : startup.desc().blocks(0).vars()) {
    ExpectSameBits(cpu_scope.GetTensor(var.name()),
                   gpu_scope.GetTensor(var.name()).CopyTo(Place::Cpu()), var.name());
  }
  auto cpu_step = cpu.Prepare(main.desc(), &cpu_scope);
  auto gpu_step = gpu.Prepare(main.desc(), &gpu_scope);
  for (uint64_t step = 0; step < 3; ++step) {
    const Tensor batch = Ids(12, 50, step);
    const auto want = cpu.Run(*cpu_step, {{"ids", batch}}, fetches);
    const auto got = gpu.Run(*gpu_step, {{"ids", batch.CopyTo(Place::Cuda(0))}}, fetches);
    for (size_t i = 0; i < fetches.size(); ++i) {
      ExpectSameBits(want[i], got[i].CopyTo(Place::Cpu()), StrCat(fetches[i], " at step ", step));
    }
  }
}

}  // namespace
}  // namespace rill
