// llama-quantize's file types (Q4_K_M, Q3_K_S, IQ3_M, ...): the name table, and the
// per-tensor type each file type gives a model, as llama.cpp's llama_tensor_get_type
// chooses it (src/llama-quant.cpp, ngxson/llama.cpp at the commit named in
// kernels/ggml/blocks.h): bumps by tensor role and layer, the output / token-embedding
// rules, the shape fallbacks, and which tensors need an importance matrix.
#pragma once
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/ggml_type.h"
#include "schemes/tensor_type_patterns.h"

namespace amn {

// One row of llama-quantize's QUANT_OPTIONS (tools/quantize/quantize.cpp): the name it
// takes, the llama_ftype (general.file_type) and llama_ftype_get_default_type's type.
struct GgufFileTypeRow {
  std::string_view name;
  uint32_t ftype;
  GgmlType default_type;
};
std::span<const GgufFileTypeRow> gguf_file_type_rows();
// The row for `name`, compared case-insensitively as llama-quantize does (its first match:
// Q4_K is its alias for Q4_K_M). nullptr for a name it does not take.
const GgufFileTypeRow* gguf_file_type_row(std::string_view name);
std::string gguf_file_type_names();  // "Q1_0, Q2_0, Q4_0, ..." in the table's order
// True when the file type's default type is one llama-quantize's tensor_requires_imatrix
// refuses without an importance matrix (every layer weight would need one).
bool gguf_file_type_needs_imatrix(const GgufFileTypeRow& row);
// llama-quantize's tensor_requires_imatrix: `name` written as `type` in file type `ftype`
// (0 for --pure with a ggml type) needs an importance matrix entry.
bool gguf_tensor_requires_imatrix(std::string_view name, GgmlType type, uint32_t ftype);

// What llama_tensor_get_type reads of the model (llama_hparams, llama_model::type).
struct GgufMixModel {
  std::string arch;         // general.architecture
  uint32_t n_layer = 0;     // {arch}.block_count (n_layer_all)
  uint32_t n_head = 0;      // {arch}.attention.head_count (layer 0's when per layer)
  uint32_t n_head_kv = 0;   // {arch}.attention.head_count_kv (default: n_head)
  uint32_t n_expert = 0;    // {arch}.expert_count
  bool is_70b = false;      // llama.cpp's LLM_TYPE_70B (the llama architecture's rule)
  uint32_t n_gqa() const { return n_head_kv ? n_head / n_head_kv : 0; }
};

struct GgufMixSettings {
  const GgufFileTypeRow* file_type = nullptr;
  bool pure = false;                     // --pure: every tensor the default type
  std::optional<GgmlType> output_type;   // --output-tensor-type
  std::optional<GgmlType> token_embd_type;  // --token-embedding-type
  bool quantize_output = true;           // false: --leave-output-tensor
  // --tensor-type NAME=TYPE: tried in order on a tensor when the default type is quantized;
  // the first match gives tensor_type_types[i] and skips the file type's rules (and their
  // counters), as llama_tensor_get_type does.
  TensorTypePatterns tensor_types;
  std::vector<GgmlType> tensor_type_types;
  bool has_imatrix = false;
};

// A tensor as llama-quantize's loop sees it.
struct GgufMixTensor {
  std::string_view name;
  uint64_t ncols = 0;       // ne[0]: the row length
  uint64_t ne2 = 1;         // ne[2]: experts, for MXFP4_MOE
  bool quantizable = false; // tensor_allows_quantization, without the output rule
};

// Per tensor (in the order given): the type llama-quantize writes, or nullopt when it keeps
// the tensor as stored; kNoGgmlType when its rows fit no type (llama-quantize: "no tensor
// type fallback is defined"). Errors: invalid_argument for a layer number
// llama_tensor_get_type refuses (MoE models, whose layer comes from the name).
struct GgufMixChoice {
  std::optional<GgmlType> type;
  bool requires_imatrix = false;  // tensor_requires_imatrix for the chosen type
};
Result<std::vector<GgufMixChoice>> gguf_mix_types(const GgufMixSettings& settings, const GgufMixModel& model,
                                                  std::span<const GgufMixTensor> tensors);

// llama-quantize's tensor_type_fallback: the type a row of `ncols` takes when `target`'s
// blocks do not divide it (F16 when the fallback's do not either); kNoGgmlType when
// llama-quantize defines no fallback.
GgmlType gguf_fallback_type(GgmlType target, uint64_t ncols);

// llama_model_loader's weight_name_comparer, the order llama-quantize walks a model in:
// layer (sscanf "blk.%d.", -1 without one), then name.
bool gguf_loader_order(std::string_view a, std::string_view b);

// The indices 0 .. n-1 in that order of name_of(i) (equal names keep their order).
template <class NameOf>
std::vector<size_t> gguf_loader_order_of(size_t n, NameOf name_of) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return gguf_loader_order(name_of(a), name_of(b)); });
  return order;
}

}  // namespace amn
