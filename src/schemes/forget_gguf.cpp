#include "schemes/forget_gguf.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/ggml_type.h"
#include "kernels/cast.h"
#include "kernels/ggml/dequantize.h"
#include "kernels/ggml/quantize.h"
#include "kernels/ggml/requantize.h"
#include "formats/gguf/describe.h"
#include "schemes/forget_util.h"
#include "schemes/gguf_mix.h"

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

// The rows of one matrix: ne[1] (a 3-D tensor holds ne[2] of them, one per expert).
uint64_t matrix_rows(const TensorRecord& t) { return t.shape.size() >= 2 ? t.shape[t.shape.size() - 2] : 1; }
uint64_t expert_count(const TensorRecord& t) { return t.shape.size() >= 3 ? t.shape[t.shape.size() - 3] : 1; }

bool is_token_embd(std::string_view name) { return name == "token_embd.weight" || name == "per_layer_token_embd.weight"; }

// `imatrix`: the weights of every expert (ne[0] each, expert after expert), or null.
// A source stored in a ggml block type (--allow-requantize) is dequantized to F32 first,
// as llama-quantize's llama_tensor_dequantize_impl does.
// `reference` (forget --like G --reuse-scales): the tensor's blocks in G, whose scales
// every block keeps (kernels/ggml/requantize.h). An F32 target (a --like reference's
// type) is the values as read.
class GgufOp final : public EncodeOp {
 public:
  GgufOp(const TensorRecord& t, GgmlType type, std::shared_ptr<const ImportanceMatrix> matrix, const std::vector<float>* imatrix,
         std::shared_ptr<const std::vector<uint8_t>> reference = nullptr)
      : type_(type), source_type_(t.block_type.empty() ? kNoGgmlType : t.ggml_type), cols_(row_length(t)),
        matrix_rows_(matrix_rows(t)), matrix_(std::move(matrix)), imatrix_(imatrix), reference_(std::move(reference)) {
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
    if (source_type_ != kNoGgmlType) {
      const GgmlTraits& from_info = *ggml_traits(source_type_);
      const uint64_t from_row = cols_ / from_info.block_elements * from_info.block_bytes;
      dequantize_ggml(source_type_, source.data() + r0 * from_row, values.data(), n / from_info.block_elements);
    } else {
      load_f32(source, from, r0 * cols_, n, values.data());
    }
    const GgmlTraits& info = *ggml_traits(type_);
    size_t wrote = 0;
    if (type_ == GgmlType::F32) {
      std::memcpy(out, values.data(), n * 4);
      wrote = n * 4;
    } else if (reference_) {
      const uint64_t blocks = n / info.block_elements;
      if (reference_->size() < r1 * row_bytes_ ||
          !requantize_ggml(type_, values.data(), reference_->data() + r0 * row_bytes_, out, blocks)) {
        return make_error(ErrorCode::internal, "no " + std::string(info.name) + " blocks of the reference to re-encode with");
      }
      wrote = (r1 - r0) * row_bytes_;
    } else {
      wrote = quantize_rows(values.data(), r0, r1, out);
    }
    if (wrote != (r1 - r0) * row_bytes_) {
      return make_error(ErrorCode::internal, "the " + std::string(ggml_traits(type_)->name) + " encoder wrote " +
                                                 std::to_string(wrote) + " bytes");
    }
    // What ggml's loader reads back: to_float of the blocks, or the F16 / BF16 values.
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
  // llama-quantize quantizes expert by expert, each with its own part of the matrix.
  size_t quantize_rows(const float* values, uint64_t r0, uint64_t r1, uint8_t* out) const {
    size_t wrote = 0;
    for (uint64_t r = r0; r < r1;) {
      const uint64_t expert = r / matrix_rows_, end = std::min(r1, (expert + 1) * matrix_rows_);
      const float* weights = imatrix_ ? imatrix_->data() + expert * cols_ : nullptr;
      wrote += quantize_ggml(type_, values + (r - r0) * cols_, out + (r - r0) * row_bytes_, static_cast<int64_t>(end - r),
                             static_cast<int64_t>(cols_), weights);
      r = end;
    }
    return wrote;
  }

  GgmlType type_, source_type_;
  uint64_t cols_, matrix_rows_, rows_ = 0, row_bytes_ = 0;
  std::shared_ptr<const ImportanceMatrix> matrix_;  // keeps imatrix_ alive
  const std::vector<float>* imatrix_;
  std::shared_ptr<const std::vector<uint8_t>> reference_;
  std::vector<TensorSpec> specs_;
  mutable SumsByPiece sums_;
};

// The reason llama-quantize's tensor_allows_quantization gives for keeping `t` as stored
// (empty: it quantizes it), but for the output tensor rule (--leave-output-tensor).
std::string llama_keep_reason(const TensorRecord& t) {
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
  return {};
}

// What llama_tensor_get_type reads of a GGUF input's KVs (llama_model_loader, load_hparams).
Result<GgufMixModel> mix_model(const Model& model) {
  if (model.format != ModelFormat::gguf || !model.format_state) {
    return make_error(ErrorCode::unsupported,
                      "llama-quantize's file types need a GGUF input (its KVs name the architecture and the layers); "
                      "use --pure with a ggml type for other inputs");
  }
  const GgufFile& g = static_cast<const GgufState&>(*model.format_state).header;
  GgufMixModel m;
  const GgufValue* arch = g.find("general.architecture");
  if (!arch || arch->type != GgufType::STRING) {
    return make_error(ErrorCode::invalid_argument, "the GGUF has no general.architecture (llama-quantize needs it)");
  }
  m.arch = arch->str;
  // An unsigned count, or an array's first element (per-layer head counts: layer 0's).
  auto count = [&](const std::string& key) -> std::optional<uint64_t> {
    const GgufValue* v = g.find(key);
    if (!v) return std::nullopt;
    if (v->type == GgufType::ARRAY && v->count > 0 && v->elem_type != GgufType::STRING && v->elem_type != GgufType::ARRAY &&
        v->elem_type != GgufType::FLOAT32 && v->elem_type != GgufType::FLOAT64 && v->elem_type != GgufType::BOOL) {
      const bool is_signed = v->elem_type == GgufType::INT8 || v->elem_type == GgufType::INT16 ||
                             v->elem_type == GgufType::INT32 || v->elem_type == GgufType::INT64;
      if (is_signed) {
        const int64_t x = v->int_at(0);
        return x < 0 ? std::nullopt : std::optional<uint64_t>(static_cast<uint64_t>(x));
      }
      return v->uint_at(0);
    }
    return v->as_uint();
  };
  auto u32 = [](uint64_t v) { return static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX)); };
  const auto n_layer = count(m.arch + ".block_count");
  if (!n_layer || *n_layer == 0 || *n_layer > 512) {  // llama.cpp: 0 < n_layer_all <= LLAMA_MAX_LAYERS (512)
    return make_error(ErrorCode::invalid_argument, "the GGUF's " + m.arch + ".block_count is missing or not in 1..512 (llama-quantize needs it)");
  }
  m.n_layer = u32(*n_layer);
  m.n_head = u32(count(m.arch + ".attention.head_count").value_or(0));
  m.n_head_kv = u32(count(m.arch + ".attention.head_count_kv").value_or(m.n_head));
  m.n_expert = u32(count(m.arch + ".expert_count").value_or(0));
  // llama_model_llama::load_arch_hparams: 80 layers with grouped heads is LLM_TYPE_70B.
  m.is_70b = m.arch == "llama" && m.n_expert != 8 && m.n_layer == 80 && m.n_head != m.n_head_kv;
  return m;
}

class GgufForgetter final : public Forgetter {
 public:
  GgufForgetter(GgufMixSettings settings, GgmlType pure_type, std::shared_ptr<const ImportanceMatrix> imatrix, bool allow_requantize)
      : settings_(std::move(settings)), pure_type_(pure_type), imatrix_(std::move(imatrix)), allow_requantize_(allow_requantize) {
    // An importance matrix without entries is none (llama-quantize passes no matrix on).
    if (imatrix_ && imatrix_->entries.empty()) imatrix_.reset();
    settings_.has_imatrix = imatrix_ != nullptr;
    // --pure with a ggml type: a row of its own (the ftype is not read: no mix, no refusal).
    if (pure_type_ != kNoGgmlType) {
      pure_row_ = GgufFileTypeRow{ggml_traits(pure_type_)->name, 0, pure_type_};
      settings_.file_type = &pure_row_;
    }
  }
  GgufForgetter(const GgufForgetter&) = delete;
  GgufForgetter& operator=(const GgufForgetter&) = delete;

  // The file type's choice for every tensor of the model, as llama-quantize makes it; --pure
  // with a ggml type needs no model (each tensor's type follows from its shape).
  Status prepare(const Model& model) override {
    if (pure_type_ != kNoGgmlType && !settings_.output_type && !settings_.token_embd_type && settings_.quantize_output &&
        settings_.tensor_types.empty()) {
      return {};
    }
    GgufMixModel m;  // --pure reads nothing of the model
    if (!settings_.pure) {
      AMN_ASSIGN(m, mix_model(model));
    }
    std::vector<GgufMixTensor> tensors;
    for (const TensorRecord& t : model.tensors) {
      const uint64_t ne2 = t.shape.size() >= 3 ? t.shape[t.shape.size() - 3] : 1;
      tensors.push_back({t.name, row_length(t), ne2, llama_keep_reason(t).empty()});
    }
    AMN_ASSIGN(auto choices, gguf_mix_types(settings_, m, tensors));
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (choices[i].requires_imatrix && pure_type_ == kNoGgmlType && !imatrix_) {
        return make_error(ErrorCode::invalid_argument,
                          "imatrix: " + std::string(settings_.file_type->name) + " needs an importance matrix (llama-quantize refuses without one: '" +
                              model.tensors[i].name + "' would be " + std::string(ggml_traits(*choices[i].type)->name) + ")");
      }
      chosen_.emplace(model.tensors[i].name, choices[i].type);
    }
    prepared_ = true;
    return {};
  }

  std::string default_keep_reason(const TensorRecord& t) const override {
    std::string why = llama_keep_reason(t);
    if (!why.empty()) return why;
    const auto type = type_of(t);
    if (!type) return "--leave-output-tensor";
    // llama-quantize copies a tensor already of the type it chose (no requantizing).
    if (*type != kNoGgmlType && ((t.dtype == ggml_traits(*type)->dtype && t.block_type.empty()) ||
                                 (!t.block_type.empty() && t.ggml_type == *type))) {
      return "already " + std::string(ggml_traits(*type)->name);
    }
    return {};
  }

  std::string cannot_hold(const TensorRecord& t) const override {
    // A ggml block type is read through F32 (--allow-requantize; encode_chosen refuses
    // without it, as llama-quantize does).
    const bool dequantizable = !t.block_type.empty() && t.ggml_type != kNoGgmlType && ggml_can_dequantize(t.ggml_type);
    if (!dequantizable && (!is_forgettable_dtype(t.dtype) || !t.block_type.empty())) {
      return "stored as " + std::string(stored_type_name(t)) + " (forget reads F16, BF16, F32 or a ggml block type)";
    }
    if (t.elements == 0) return "it has no elements";
    const auto to = type_of(t);
    if (!to) return "--leave-output-tensor";
    if (*to == kNoGgmlType) {
      return "its rows of " + std::to_string(row_length(t)) + " do not divide into " + std::string(ggml_traits(default_type())->name) +
             " blocks (llama-quantize has no fallback for it)";
    }
    const GgmlTraits& info = *ggml_traits(*to);
    if (info.quantized && row_length(t) % info.block_elements != 0) {  // --output-tensor-type / --token-embedding-type
      return "its rows of " + std::to_string(row_length(t)) + " do not divide into " + std::string(info.name) + " blocks";
    }
    if (!ggml_can_quantize(*to)) {
      return "it would be " + std::string(info.name) + ", which amn cannot write yet";
    }
    if (ggml_quantize_requires_imatrix(*to) && !imatrix_) {
      return "it would be " + std::string(info.name) + ", which needs an importance matrix";
    }
    return {};
  }

  std::shared_ptr<const EncodeOp> encode(const TensorRecord& t) const override {
    return std::make_shared<GgufOp>(t, type_of(t).value_or(GgmlType::F16), nullptr, nullptr);
  }

  // Each tensor's importance matrix entry, found and checked as llama-quantize's main loop
  // does, and its refusals: requantizing without --allow-requantize, an entry of the wrong
  // size, a very low-bit type without an entry.
  Result<std::vector<std::shared_ptr<const EncodeOp>>> encode_chosen(const Model& model,
                                                                     std::span<const TensorRecord* const> chosen) const override {
    (void)model;
    std::vector<std::shared_ptr<const EncodeOp>> ops;
    for (const TensorRecord* t : chosen) {
      const GgmlType type = type_of(*t).value_or(GgmlType::F16);
      if (!t->block_type.empty() && !allow_requantize_) {
        // Named both ways: npx amn reports it through the npm API, and both CLIs print the same line.
        return make_error(ErrorCode::invalid_argument, "requantizing from type " + t->block_type + " is disabled ('" + t->name +
                                                           "' would be " + std::string(ggml_traits(type)->name) +
                                                           "): --allow-requantize (npm: allowRequantize) lets it go through F32, as llama-quantize's option");
      }
      const std::vector<float>* weights = nullptr;
      if (imatrix_) {
        const auto it = imatrix_->entries.find(t->name);
        const uint64_t want = row_length(*t) * expert_count(*t);
        if (it != imatrix_->entries.end()) {
          if (it->second.size() == want) {
            weights = &it->second;
          } else if (!is_token_embd(t->name)) {  // llama-quantize lets token_embd go without
            return make_error(ErrorCode::invalid_argument, "imatrix size " + std::to_string(it->second.size()) +
                                                               " is different from tensor size " + std::to_string(want) + " for " + t->name);
          }
        }
        if (weights && t->shape.size() > 3 && t->shape[t->shape.size() - 4] > 1) {
          return make_error(ErrorCode::unsupported, "'" + t->name + "' is 4-D: llama-quantize's per-expert importance matrix covers 3-D tensors only");
        }
      }
      if (!weights && imatrix_ && pure_type_ == kNoGgmlType && gguf_tensor_requires_imatrix(t->name, type, settings_.file_type->ftype)) {
        return make_error(ErrorCode::invalid_argument, "missing importance matrix for tensor " + t->name +
                                                           " in a very low-bit quantization (llama-quantize bails out: the result would be garbage)");
      }
      if (!weights && ggml_quantize_requires_imatrix(type)) {  // ggml asserts: no output without one
        return make_error(ErrorCode::invalid_argument, "'" + t->name + "' would be " + std::string(ggml_traits(type)->name) +
                                                           ", which ggml makes only with an importance matrix, and the matrix has no entry for it");
      }
      ops.push_back(std::make_shared<GgufOp>(*t, type, imatrix_, weights));
    }
    return ops;
  }
  // GGUF has no quantization_config: the types are in each tensor's info.
  std::string quantization_config_json() const override { return "null"; }
  std::string describe() const override {
    if (pure_type_ != kNoGgmlType) return std::string(ggml_traits(pure_type_)->name) + " (ggml, GGUF)";
    return std::string(settings_.file_type->name) + " (llama-quantize's mix, GGUF)";
  }

 private:
  GgmlType default_type() const { return pure_type_ != kNoGgmlType ? pure_type_ : settings_.file_type->default_type; }
  // The type `t` becomes; nullopt: kept as stored.
  std::optional<GgmlType> type_of(const TensorRecord& t) const {
    if (!prepared_) return gguf_fallback_type(pure_type_, row_length(t));  // --pure, no model needed
    const auto it = chosen_.find(t.name);
    return it == chosen_.end() ? std::nullopt : it->second;
  }

  GgufMixSettings settings_;
  GgufFileTypeRow pure_row_{};
  GgmlType pure_type_;  // --pure with a ggml type: that type; else kNoGgmlType (the file type's mix)
  bool prepared_ = false;
  std::unordered_map<std::string, std::optional<GgmlType>> chosen_;
  std::shared_ptr<const ImportanceMatrix> imatrix_;
  bool allow_requantize_;
};

}  // namespace

std::shared_ptr<const EncodeOp> make_gguf_op(const TensorRecord& t, GgmlType type,
                                             std::shared_ptr<const std::vector<uint8_t>> reference) {
  return std::make_shared<GgufOp>(t, type, nullptr, nullptr, std::move(reference));
}

std::vector<std::string_view> gguf_forget_types() {
  std::vector<std::string_view> out;
  for (const GgmlTraits& t : kGgmlTraits) {
    if (ggml_can_quantize(t.type)) out.push_back(t.name);
  }
  return out;
}

std::string gguf_forget_type_names() {
  std::string out;
  for (std::string_view t : gguf_forget_types()) out += (out.empty() ? "" : ", ") + std::string(t);
  return out;
}

std::optional<GgufFileType> gguf_file_type(std::string_view name) {
  // The ftype llama-quantize writes for the name (its table: Q4_K means Q4_K_M, 15); the
  // ggml types it has no file type of, as llama.h numbers them (MXFP4 as MXFP4_MOE).
  if (const GgufFileTypeRow* row = gguf_file_type_row(name)) return GgufFileType{row->ftype, 2};
  const auto type = ggml_type_from_name(name);
  if (type == GgmlType::MXFP4) return GgufFileType{38, 2};
  if (type == GgmlType::NVFP4) return GgufFileType{39, 2};
  return std::nullopt;
}

namespace {

Result<std::optional<GgmlType>> option_type(const std::string& name, std::string_view option, bool has_imatrix) {
  if (name.empty()) return std::optional<GgmlType>();
  const auto t = ggml_type_from_name(name);
  if (!t) return make_error(ErrorCode::invalid_argument, std::string(option) + ": '" + name + "' is not a ggml type");
  if (!ggml_can_quantize(*t)) {
    return make_error(ErrorCode::unsupported, std::string(option) + ": amn cannot write " + std::string(ggml_traits(*t)->name) + " yet");
  }
  if (ggml_quantize_requires_imatrix(*t) && !has_imatrix) {
    return make_error(ErrorCode::invalid_argument,
                      std::string(option) + ": " + std::string(ggml_traits(*t)->name) + " needs an importance matrix (imatrix)");
  }
  return std::optional<GgmlType>(*t);
}

}  // namespace

Result<std::unique_ptr<Forgetter>> make_gguf_forgetter(const ForgetSettings& s) {
  if (s.blocksize || s.double_quant || s.torch_threads != 1) {
    return make_error(ErrorCode::invalid_argument, "GGUF types have no blocksize or double quantization (bitsandbytes 4-bit only)");
  }
  if (!s.gguf && (!s.imatrix_file.empty() || s.allow_requantize)) {
    return make_error(ErrorCode::invalid_argument, "an importance matrix and requantizing are for GGUF output");
  }
  // llama-quantize refuses a matrix with a NaN or an infinity before it quantizes anything.
  if (s.imatrix) {
    for (const auto& [name, values] : s.imatrix->entries) {
      for (float v : values) {
        if (!std::isfinite(v)) {
          return make_error(ErrorCode::invalid_argument, "imatrix: the importance matrix has a non-finite value (" +
                                                             std::to_string(v) + ") for '" + name + "' (llama-quantize refuses it)");
        }
      }
    }
  }
  const bool has_imatrix = !s.imatrix_file.empty();  // the matrix itself may come later (a request only checked)
  GgufMixSettings mix;
  mix.pure = s.pure;
  mix.quantize_output = !s.leave_output_tensor;
  AMN_ASSIGN(mix.output_type, option_type(s.output_tensor_type, "outputTensorType", has_imatrix));
  AMN_ASSIGN(mix.token_embd_type, option_type(s.token_embedding_type, "tokenEmbeddingType", has_imatrix));
  AMN_ASSIGN(mix.tensor_types, TensorTypePatterns::parse(s.tensor_types, "tensorType"));
  for (size_t i = 0; i < mix.tensor_types.size(); ++i) {
    AMN_ASSIGN(const auto t, option_type(std::string(mix.tensor_types.type_name(i)), "tensorType", has_imatrix));
    mix.tensor_type_types.push_back(*t);
  }
  // Names as llama-quantize's table takes them (Q4_K is its Q4_K_M); with --pure a ggml
  // type name is that type on every tensor, and a name only ggml has (MXFP4, NVFP4) is
  // always written pure: llama-quantize has no file type of it.
  const GgufFileTypeRow* row = gguf_file_type_row(s.scheme);
  const auto type = ggml_type_from_name(s.scheme);
  if (!row && !type) {
    return make_error(ErrorCode::invalid_argument, "'" + s.scheme + "' is neither one of llama-quantize's file types (" +
                                                       gguf_file_type_names() + ") nor a ggml type (" + gguf_forget_type_names() + ")");
  }
  if (type && (s.pure || !row)) {
    const std::string name(ggml_traits(*type)->name);
    // With --pure, the types ggml cannot make without a matrix (the other IQ types are
    // written as ggml writes them without one: docs/cli.md).
    if (ggml_quantize_requires_imatrix(*type) && !has_imatrix) {
      return make_error(ErrorCode::invalid_argument, "imatrix: " + name + " needs an importance matrix (ggml makes it only with one)");
    }
    if (!ggml_can_quantize(*type)) {
      if (!ggml_traits(*type)->quantized) {
        return make_error(ErrorCode::invalid_argument, name + " is not a type forget writes (" + gguf_forget_type_names() + ")");
      }
      return make_error(ErrorCode::unsupported, "GGUF type " + name + " has no encoder in amn yet (" + gguf_forget_type_names() + " have)");
    }
    mix.pure = true;
    return std::unique_ptr<Forgetter>(std::make_unique<GgufForgetter>(mix, *type, s.imatrix, s.allow_requantize));
  }
  if (gguf_file_type_needs_imatrix(*row) && !has_imatrix) {
    return make_error(ErrorCode::invalid_argument, "imatrix: " + std::string(row->name) + " needs an importance matrix (llama-quantize refuses " +
                                                       std::string(ggml_traits(row->default_type)->name) + " layer weights without one)");
  }
  if (!ggml_can_quantize(row->default_type)) {
    return make_error(ErrorCode::unsupported, std::string(row->name) + " writes " + std::string(ggml_traits(row->default_type)->name) +
                                                  ", which amn has no encoder for yet");
  }
  mix.file_type = row;
  return std::unique_ptr<Forgetter>(std::make_unique<GgufForgetter>(mix, kNoGgmlType, s.imatrix, s.allow_requantize));
}

}  // namespace amn
