// Planning a forget (quantization): the model's tensors in file order, each chosen
// weight replaced by its encoder's outputs (the quantized weight and its companions),
// every other tensor copied as stored. The choice follows the scheme's producer
// (Forgetter::default_keep_reason), then --skip / --only.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "convert/plan.h"
#include "schemes/forget.h"

namespace amn {

struct ForgetOptions {
  std::shared_ptr<const Forgetter> forgetter;
  std::vector<std::string> skip;  // globs (fnmatch) over tensor names: kept as stored
  std::vector<std::string> only;  // non-empty: quantize exactly the tensors these match
  bool strict = false;            // a chosen tensor the scheme cannot hold is an error
  // The output's tensors in llama.cpp's loader order (by layer, then name), as
  // llama-quantize writes them; else in the input's order.
  bool loader_order = false;
  // The container: safetensors, or GGUF (convert.to) with the source's KVs and
  // convert.gguf_kv's, as convert --to gguf writes them (convert/plan_gguf.h).
  ConvertOptions convert;
};

// What happened to each tensor, for the report: quantized (with its encoder) or kept.
struct ForgetEntry {
  std::string name;
  std::vector<uint64_t> shape;
  DType dtype = DType::F32;
  uint64_t elements = 0;
  uint64_t bytes_before = 0;
  int32_t encoder = -1;  // index into Plan::encoders, or -1: kept
  std::string kept_because;
};

struct ForgetPlan {
  Plan plan;
  std::vector<ForgetEntry> entries;   // every input tensor, in file order
  std::vector<std::string> warnings;  // chosen tensors the scheme could not hold
  std::shared_ptr<const Forgetter> forgetter;
};

// Errors: unsupported for a model already quantized (remember it first), invalid_argument
// with strict when a chosen tensor cannot be held, and the planner's.
Result<ForgetPlan> plan_forget(const Model& model, const ForgetOptions& options);

// Bytes the outputs of entry `e` take (after prepare: final).
uint64_t forget_bytes_after(const ForgetPlan& plan, const ForgetEntry& e);

}  // namespace amn
