#include "schemes/forget_gguf.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "core/ggml_type.h"
#include "kernels/cast.h"
#include "kernels/ggml/dequantize.h"
#include "kernels/ggml/quantize.h"
#include "schemes/forget_util.h"

namespace amn {
namespace {

using namespace std::string_view_literals;

// llama-quantize's tensor_allows_quantization (src/llama-quant.cpp, ngxson/llama.cpp at
// the commit named in kernels/ggml/blocks.h): names never quantized, as substrings...
constexpr std::array kNeverQuantizedParts = {
    "_norm.weight"sv, "ffn_gate_inp.weight"sv, "ffn_gate_tid2eid.weight"sv, "altup"sv, "laurel"sv,
    "per_layer_model_proj"sv, "ssm_conv1d"sv, "shortconv.conv.weight"sv, "indexer.k_proj.weight"sv,
    "indexer.q_proj.weight"sv, "time_mix_first.weight"sv, "time_mix_w0.weight"sv, "time_mix_w1.weight"sv,
    "time_mix_w2.weight"sv, "time_mix_v0.weight"sv, "time_mix_v1.weight"sv, "time_mix_v2.weight"sv,
    "time_mix_a0.weight"sv, "time_mix_a1.weight"sv, "time_mix_a2.weight"sv, "time_mix_g1.weight"sv,
    "time_mix_g2.weight"sv, "time_mix_decay_w1.weight"sv, "time_mix_decay_w2.weight"sv,
    "time_mix_lerp_fused.weight"sv, "attn_rel_b.weight"sv, ".position_embd"sv, "sam.pos_embd"sv, "sam.neck."sv,
    "sam.net_"sv, ".rel_pos"sv, ".patch_embd"sv, ".patch_merger"sv, "a.rvq.codebook"sv, "mm.a.code_embd"sv,
};
// ... and whole names (LLM_TENSOR_POS_EMBD and LLM_TENSOR_TOKEN_TYPES, "weight").
constexpr std::array kNeverQuantizedNames = {"position_embd.weight"sv, "token_types.weight"sv};

// ggml_n_dims: the dimensions up to the last one above 1, in GGUF order (ne[0] is the
// row-major shape's last).
size_t ggml_n_dims(const std::vector<uint64_t>& shape) {
  size_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[shape.size() - 1 - i] != 1) n = i + 1;
  }
  return n;
}

uint64_t row_length(const TensorRecord& t) { return t.shape.empty() ? 1 : t.shape.back(); }

// llama-quantize's tensor_type_fallback: the type a row of `ncols` takes when `target`'s
// blocks do not divide it (F16 when the fallback's do not either).
GgmlType fallback_type(GgmlType target, uint64_t ncols) {
  const GgmlTraits& t = *ggml_traits(target);
  if (!t.quantized || ncols % t.block_elements == 0) return target;
  GgmlType to = GgmlType::F16;
  switch (target) {
    case GgmlType::IQ1_S: case GgmlType::IQ1_M: case GgmlType::IQ2_XXS: case GgmlType::IQ2_XS:
    case GgmlType::IQ2_S: case GgmlType::IQ3_XXS: case GgmlType::IQ3_S: case GgmlType::IQ4_XS:
      to = GgmlType::IQ4_NL;
      break;
    case GgmlType::Q2_0: case GgmlType::Q2_K: case GgmlType::Q3_K: case GgmlType::TQ1_0: case GgmlType::TQ2_0:
      to = GgmlType::Q4_0;
      break;
    case GgmlType::Q4_K: to = GgmlType::Q5_0; break;
    case GgmlType::Q5_K: to = GgmlType::Q5_1; break;
    case GgmlType::Q6_K: to = GgmlType::Q8_0; break;
    default: return kNoGgmlType;  // llama-quantize: "no tensor type fallback is defined"
  }
  return ncols % ggml_traits(to)->block_elements == 0 ? to : GgmlType::F16;
}

class GgufOp final : public EncodeOp {
 public:
  GgufOp(const TensorRecord& t, GgmlType type) : type_(type), cols_(row_length(t)) {
    const GgmlTraits& info = *ggml_traits(type);
    rows_ = cols_ ? t.elements / cols_ : 0;
    row_bytes_ = cols_ / info.block_elements * info.block_bytes;
    TensorSpec spec{t.name, info.dtype.value_or(DType::U8), t.shape, rows_ * row_bytes_, type};
    specs_.push_back(std::move(spec));
  }
  std::span<const TensorSpec> outputs() const override { return specs_; }
  uint64_t granularity(size_t) const override { return row_bytes_; }
  LetheSums distance() const override { return sums_.total(); }

  Status run(std::span<const uint8_t> source, DType from, size_t, uint64_t begin, uint64_t end,
             uint8_t* out) const override {
    const uint64_t r0 = begin / row_bytes_, r1 = end / row_bytes_;
    const uint64_t n = (r1 - r0) * cols_;
    std::vector<float> values(n), back(n);
    load_f32(source, from, r0 * cols_, n, values.data());
    const size_t wrote = quantize_ggml(type_, values.data(), out, static_cast<int64_t>(r1 - r0),
                                       static_cast<int64_t>(cols_), nullptr);
    if (wrote != (r1 - r0) * row_bytes_) {
      return make_error(ErrorCode::internal, "the " + std::string(ggml_traits(type_)->name) + " encoder wrote " +
                                                 std::to_string(wrote) + " bytes");
    }
    // What ggml's loader reads back: to_float of the blocks, or the F16 / BF16 values.
    const GgmlTraits& info = *ggml_traits(type_);
    if (info.dtype) {
      cast_floats(*info.dtype, DType::F32, out, reinterpret_cast<uint8_t*>(back.data()), n);
    } else {
      dequantize_ggml(type_, out, back.data(), n / info.block_elements);
    }
    LetheSums sums;
    for (uint64_t i = 0; i < n; ++i) sums.add(values[i], back[i]);
    sums_.put(begin, sums);
    return {};
  }

 private:
  GgmlType type_;
  uint64_t cols_, rows_ = 0, row_bytes_ = 0;
  std::vector<TensorSpec> specs_;
  mutable SumsByPiece sums_;
};

class GgufForgetter final : public Forgetter {
 public:
  explicit GgufForgetter(GgmlType type) : type_(type) {}

  // llama-quantize --pure: 2-D and larger "*weight" tensors, but the ones it never
  // quantizes; the rest stays as stored (1-D norms and biases keep F32).
  std::string default_keep_reason(const TensorRecord& t) const override {
    if (ggml_n_dims(t.shape) < 2) return "1-D (llama-quantize keeps it)";
    const std::string_view n = t.name;
    // ggml compares with rfind, so a name shorter than "weight" ... never ends with it.
    if (n.size() < 6 || n.rfind("weight") != n.size() - 6) return "not a weight (llama-quantize keeps it)";
    for (std::string_view part : kNeverQuantizedParts) {
      if (n.find(part) != std::string_view::npos) return "llama-quantize never quantizes it";
    }
    for (std::string_view name : kNeverQuantizedNames) {
      if (n == name) return "llama-quantize never quantizes it";
    }
    if (t.dtype == ggml_traits(type_)->dtype && t.block_type.empty()) {
      return "already " + std::string(ggml_traits(type_)->name);
    }
    return {};
  }

  std::string cannot_hold(const TensorRecord& t) const override {
    if (!is_forgettable_dtype(t.dtype) || !t.block_type.empty()) {
      return "stored as " + std::string(stored_type_name(t)) + " (forget reads F16, BF16 or F32)";
    }
    if (t.elements == 0) return "it has no elements";
    const GgmlType to = fallback_type(type_, row_length(t));
    if (to == kNoGgmlType) {
      return "its rows of " + std::to_string(row_length(t)) + " do not divide into " +
             std::string(ggml_traits(type_)->name) + " blocks (llama-quantize has no fallback for it)";
    }
    if (!ggml_can_quantize(to)) {
      return "its rows of " + std::to_string(row_length(t)) + " fall back to " + std::string(ggml_traits(to)->name) +
             ", which amn cannot write yet";
    }
    return {};
  }

  std::shared_ptr<const EncodeOp> encode(const TensorRecord& t) const override {
    return std::make_shared<GgufOp>(t, fallback_type(type_, row_length(t)));
  }
  // GGUF has no quantization_config: the types are in each tensor's info.
  std::string quantization_config_json() const override { return "null"; }
  std::string describe() const override { return std::string(ggml_traits(type_)->name) + " (ggml, GGUF)"; }

 private:
  GgmlType type_;
};

}  // namespace

std::vector<std::string_view> gguf_forget_types() {
  std::vector<std::string_view> out;
  // Not yet the types that need an importance matrix: forget reads none yet.
  for (const GgmlTraits& t : kGgmlTraits) {
    if (ggml_can_quantize(t.type) && !ggml_quantize_requires_imatrix(t.type)) out.push_back(t.name);
  }
  return out;
}

std::string gguf_forget_type_names() {
  std::string out;
  for (std::string_view t : gguf_forget_types()) out += (out.empty() ? "" : ", ") + std::string(t);
  return out;
}

std::optional<GgufFileType> gguf_file_type(std::string_view name) {
  // llama.h's enum llama_ftype at the pinned commit, as llama-quantize names it: its type
  // name Q3_K / Q4_K / Q5_K is the _M file type (tools/quantize/quantize.cpp).
  struct Row {
    GgmlType type;
    uint32_t ftype;
  };
  constexpr Row kFileTypes[] = {
      {GgmlType::F16, 1},   {GgmlType::Q4_0, 2},  {GgmlType::Q4_1, 3},  {GgmlType::Q8_0, 7},
      {GgmlType::Q5_0, 8},  {GgmlType::Q5_1, 9},  {GgmlType::Q2_K, 10}, {GgmlType::Q3_K, 12},
      {GgmlType::Q4_K, 15}, {GgmlType::Q5_K, 17}, {GgmlType::Q6_K, 18}, {GgmlType::IQ2_XXS, 19},
      {GgmlType::IQ2_XS, 20}, {GgmlType::IQ3_XXS, 23}, {GgmlType::IQ1_S, 24}, {GgmlType::IQ4_NL, 25},
      {GgmlType::IQ3_S, 26}, {GgmlType::IQ2_S, 28}, {GgmlType::IQ4_XS, 30}, {GgmlType::IQ1_M, 31},
      {GgmlType::BF16, 32}, {GgmlType::TQ1_0, 36}, {GgmlType::TQ2_0, 37}, {GgmlType::MXFP4, 38 /* MXFP4_MOE */},
      {GgmlType::NVFP4, 39}, {GgmlType::Q1_0, 40}, {GgmlType::Q2_0, 41},
  };
  const auto type = ggml_type_from_name(name);
  if (!type) return std::nullopt;
  for (const Row& r : kFileTypes) {
    if (r.type == *type) return GgufFileType{r.ftype, 2};
  }
  return std::nullopt;
}

Result<std::unique_ptr<Forgetter>> make_gguf_forgetter(const ForgetSettings& s) {
  const auto type = ggml_type_from_name(s.scheme);
  if (!type) {
    return make_error(ErrorCode::invalid_argument,
                      "'" + s.scheme + "' is not a ggml type (" + gguf_forget_type_names() +
                          "; llama-quantize's file types such as Q4_K_M are not built yet)");
  }
  const std::string name(ggml_traits(*type)->name);
  if (ggml_quantize_requires_imatrix(*type)) {
    return make_error(ErrorCode::unsupported, name + " needs an importance matrix, which amn does not read yet");
  }
  if (!ggml_can_quantize(*type)) {
    if (!ggml_traits(*type)->quantized) {
      return make_error(ErrorCode::invalid_argument, name + " is not a type forget writes (" + gguf_forget_type_names() + ")");
    }
    return make_error(ErrorCode::unsupported, "GGUF type " + name + " has no encoder in amn yet (" +
                                                  gguf_forget_type_names() + " have)");
  }
  if (s.blocksize || s.double_quant) {
    return make_error(ErrorCode::invalid_argument, "GGUF types have no blocksize or double quantization (bitsandbytes 4-bit only)");
  }
  return std::unique_ptr<Forgetter>(std::make_unique<GgufForgetter>(*type));
}

}  // namespace amn
