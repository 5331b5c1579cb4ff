#include "report/gguf_names.h"

#include <charconv>

#include "formats/gguf/describe.h"

namespace amn {
namespace {

// The names are facts of llama.cpp at commit 3f545beccee69d9975f466ec7e45fd9aacd8ba90
// (ngxson/llama.cpp): the GGUF side from gguf-py/gguf/constants.py (TENSOR_NAMES), the
// Hugging Face side from gguf-py/gguf/tensor_mapping.py (TensorNameMap's "llama-hf"
// entries), which convert_hf_to_gguf.py applies with the suffixes ".weight" and ".bias".
struct NameRow {
  std::string_view gguf, hf;
};
constexpr NameRow kModelNames[] = {
    {"token_embd", "model.embed_tokens"},  // MODEL_TENSOR.TOKEN_EMBD
    {"output_norm", "model.norm"},         // MODEL_TENSOR.OUTPUT_NORM
    {"output", "lm_head"},                 // MODEL_TENSOR.OUTPUT
};
// Within "blk.{bid}." <-> "model.layers.{bid}.".
constexpr NameRow kBlockNames[] = {
    {"attn_norm", "input_layernorm"},           // MODEL_TENSOR.ATTN_NORM
    {"attn_q", "self_attn.q_proj"},             // MODEL_TENSOR.ATTN_Q
    {"attn_k", "self_attn.k_proj"},             // MODEL_TENSOR.ATTN_K
    {"attn_v", "self_attn.v_proj"},             // MODEL_TENSOR.ATTN_V
    {"attn_output", "self_attn.o_proj"},        // MODEL_TENSOR.ATTN_OUT
    {"ffn_norm", "post_attention_layernorm"},   // MODEL_TENSOR.FFN_NORM
    {"ffn_gate", "mlp.gate_proj"},              // MODEL_TENSOR.FFN_GATE
    {"ffn_up", "mlp.up_proj"},                  // MODEL_TENSOR.FFN_UP
    {"ffn_down", "mlp.down_proj"},              // MODEL_TENSOR.FFN_DOWN
    {"attn_q_norm", "self_attn.q_norm"},        // MODEL_TENSOR.ATTN_Q_NORM (qwen3)
    {"attn_k_norm", "self_attn.k_norm"},        // MODEL_TENSOR.ATTN_K_NORM (qwen3)
};

// The architectures whose GGUF tensors all come from these rows (constants.py
// MODEL_TENSORS, less rope_freqs and the merged experts, which have no one HF tensor), and
// whether convert_hf_to_gguf permuted q / k: LlamaModel (conversion/llama.py, undo_permute)
// does; Qwen2Model and Qwen3Model (conversion/qwen.py) only rename.
struct ArchRow {
  std::string_view arch;
  bool permutes_qk;
};
constexpr ArchRow kArchs[] = {{"llama", true}, {"qwen2", false}, {"qwen3", false}};

// A KV's head count; 0 (unknown) for a per-layer array, which is not one number.
uint32_t head_count(const GgufValue& v) {
  const auto n = v.as_uint();
  return n && *n > 0 && *n <= UINT32_MAX ? static_cast<uint32_t>(*n) : 0;
}

}  // namespace

std::optional<GgufNaming> gguf_naming(const Model& model) {
  if (model.format != ModelFormat::gguf || !model.format_state) return std::nullopt;
  const GgufFile& g = static_cast<const GgufState&>(*model.format_state).header;
  const GgufValue* arch = g.find("general.architecture");
  if (!arch || arch->type != GgufType::STRING) return std::nullopt;
  for (const ArchRow& row : kArchs) {
    if (arch->str != row.arch) continue;
    GgufNaming naming{arch->str, row.permutes_qk};
    const GgufValue* heads = g.find(naming.arch + ".attention.head_count");
    const GgufValue* kv_heads = g.find(naming.arch + ".attention.head_count_kv");
    naming.n_head = heads ? head_count(*heads) : 0;
    naming.n_head_kv = kv_heads ? head_count(*kv_heads) : naming.n_head;
    return naming;
  }
  return std::nullopt;
}

std::optional<HfCounterpart> hf_counterpart(const GgufNaming& naming, std::string_view gguf_name) {
  std::string_view suffix;
  for (std::string_view s : {std::string_view(".weight"), std::string_view(".bias")}) {
    if (gguf_name.size() > s.size() && gguf_name.ends_with(s)) suffix = s;
  }
  if (suffix.empty()) return std::nullopt;
  std::string_view base = gguf_name.substr(0, gguf_name.size() - suffix.size());
  for (const NameRow& row : kModelNames) {
    if (base == row.gguf) return HfCounterpart{std::string(row.hf) + std::string(suffix)};
  }
  if (!base.starts_with("blk.")) return std::nullopt;
  base.remove_prefix(4);
  const size_t dot = base.find('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  const std::string_view layer = base.substr(0, dot);
  uint32_t bid = 0;
  const auto [end, ec] = std::from_chars(layer.data(), layer.data() + layer.size(), bid);
  if (ec != std::errc() || end != layer.data() + layer.size() || (layer.size() > 1 && layer[0] == '0')) return std::nullopt;
  const std::string_view role = base.substr(dot + 1);
  for (const NameRow& row : kBlockNames) {
    if (role != row.gguf) continue;
    HfCounterpart out{"model.layers." + std::string(layer) + "." + std::string(row.hf) + std::string(suffix)};
    // LlamaModel.modify_tensors: q_proj.weight / .bias with n_head, k_proj with n_head_kv.
    if (naming.permutes_qk && (role == "attn_q" || role == "attn_k")) {
      out.rows_permuted = true;
      out.heads = role == "attn_q" ? naming.n_head : naming.n_head_kv;
    }
    return out;
  }
  return std::nullopt;
}

uint64_t permuted_row(uint64_t row, uint64_t rows_per_head, bool to_gguf) {
  // A head's rows in Hugging Face order are [t][j] (t < 2, j < half); GGUF holds [j][t].
  const uint64_t half = rows_per_head / 2;
  if (to_gguf) return (row % half) * 2 + row / half;
  return (row % 2) * half + row / 2;
}

}  // namespace amn
