#include "schemes/gguf_mix.h"

#include <algorithm>
#include <array>
#include <cstddef>

namespace amn {
namespace {

using T = GgmlType;

// llama.h's enum llama_ftype at the pinned commit (the values general.file_type holds).
enum Ftype : uint32_t {
  Q4_0 = 2, Q4_1 = 3, Q8_0 = 7, Q5_0 = 8, Q5_1 = 9, Q2_K = 10, Q3_K_S = 11, Q3_K_M = 12, Q3_K_L = 13,
  Q4_K_S = 14, Q4_K_M = 15, Q5_K_S = 16, Q5_K_M = 17, Q6_K = 18, IQ2_XXS = 19, IQ2_XS = 20, Q2_K_S = 21,
  IQ3_XS = 22, IQ3_XXS = 23, IQ1_S = 24, IQ4_NL = 25, IQ3_S = 26, IQ3_M = 27, IQ2_S = 28, IQ2_M = 29,
  IQ4_XS = 30, IQ1_M = 31, BF16 = 32, TQ1_0 = 36, TQ2_0 = 37, MXFP4_MOE = 38, Q1_0 = 40, Q2_0 = 41, F16 = 1,
};

// tools/quantize/quantize.cpp QUANT_OPTIONS, in its order (the first match wins), with
// llama_ftype_get_default_type's type. Left out: F32 and COPY (no quantization at all).
constexpr std::array kRows = {
    GgufFileTypeRow{"Q1_0", Q1_0, T::Q1_0},       GgufFileTypeRow{"Q2_0", Q2_0, T::Q2_0},
    GgufFileTypeRow{"Q4_0", Q4_0, T::Q4_0},       GgufFileTypeRow{"Q4_1", Q4_1, T::Q4_1},
    GgufFileTypeRow{"MXFP4_MOE", MXFP4_MOE, T::MXFP4},
    GgufFileTypeRow{"Q5_0", Q5_0, T::Q5_0},       GgufFileTypeRow{"Q5_1", Q5_1, T::Q5_1},
    GgufFileTypeRow{"IQ2_XXS", IQ2_XXS, T::IQ2_XXS}, GgufFileTypeRow{"IQ2_XS", IQ2_XS, T::IQ2_XS},
    GgufFileTypeRow{"IQ2_S", IQ2_S, T::IQ2_XS},   GgufFileTypeRow{"IQ2_M", IQ2_M, T::IQ2_S},
    GgufFileTypeRow{"IQ1_S", IQ1_S, T::IQ1_S},    GgufFileTypeRow{"IQ1_M", IQ1_M, T::IQ1_M},
    GgufFileTypeRow{"TQ1_0", TQ1_0, T::TQ1_0},    GgufFileTypeRow{"TQ2_0", TQ2_0, T::TQ2_0},
    GgufFileTypeRow{"Q2_K", Q2_K, T::Q2_K},       GgufFileTypeRow{"Q2_K_S", Q2_K_S, T::Q2_K},
    GgufFileTypeRow{"IQ3_XXS", IQ3_XXS, T::IQ3_XXS}, GgufFileTypeRow{"IQ3_S", IQ3_S, T::IQ3_S},
    GgufFileTypeRow{"IQ3_M", IQ3_M, T::IQ3_S},    GgufFileTypeRow{"Q3_K", Q3_K_M, T::Q3_K},
    GgufFileTypeRow{"IQ3_XS", IQ3_XS, T::IQ3_S},  GgufFileTypeRow{"Q3_K_S", Q3_K_S, T::Q3_K},
    GgufFileTypeRow{"Q3_K_M", Q3_K_M, T::Q3_K},   GgufFileTypeRow{"Q3_K_L", Q3_K_L, T::Q3_K},
    GgufFileTypeRow{"IQ4_NL", IQ4_NL, T::IQ4_NL}, GgufFileTypeRow{"IQ4_XS", IQ4_XS, T::IQ4_XS},
    GgufFileTypeRow{"Q4_K", Q4_K_M, T::Q4_K},     GgufFileTypeRow{"Q4_K_S", Q4_K_S, T::Q4_K},
    GgufFileTypeRow{"Q4_K_M", Q4_K_M, T::Q4_K},   GgufFileTypeRow{"Q5_K", Q5_K_M, T::Q5_K},
    GgufFileTypeRow{"Q5_K_S", Q5_K_S, T::Q5_K},   GgufFileTypeRow{"Q5_K_M", Q5_K_M, T::Q5_K},
    GgufFileTypeRow{"Q6_K", Q6_K, T::Q6_K},       GgufFileTypeRow{"Q8_0", Q8_0, T::Q8_0},
    GgufFileTypeRow{"F16", F16, T::F16},          GgufFileTypeRow{"BF16", BF16, T::BF16},
};

bool iequals(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) { return lower(x) == lower(y); });
}

// tensor_category (src/llama-quant.cpp): broad roles by name.
enum class Cat { token_embd, attn_q, attn_v, attn_k, attn_qkv, attn_kv_b, attn_output, ffn_up, ffn_gate, ffn_down, output, other };

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

Cat category(std::string_view n) {
  if (n == "output.weight") return Cat::output;
  if (n == "token_embd.weight" || n == "per_layer_token_embd.weight") return Cat::token_embd;
  if (contains(n, "attn_qkv.weight")) return Cat::attn_qkv;
  if (contains(n, "attn_kv_b.weight")) return Cat::attn_kv_b;
  if (contains(n, "attn_v.weight")) return Cat::attn_v;
  if (contains(n, "attn_k.weight")) return Cat::attn_k;
  if (contains(n, "attn_q.weight")) return Cat::attn_q;
  if (contains(n, "attn_output.weight")) return Cat::attn_output;
  if (contains(n, "ffn_up")) return Cat::ffn_up;
  if (contains(n, "ffn_gate")) return Cat::ffn_gate;
  if (contains(n, "ffn_down")) return Cat::ffn_down;
  return Cat::other;
}
bool is_attn_v(Cat c) { return c == Cat::attn_v || c == Cat::attn_qkv || c == Cat::attn_kv_b; }

// sscanf(name, "blk.%d.", &layer) == 1: the layer of a "blk.N." name (an int, with the
// sign and leading blanks %d allows), nullopt otherwise. Overflow is left to the caller's
// range check: a name's number beyond int range never names a real layer.
std::optional<long long> blk_layer(std::string_view n) {
  if (n.substr(0, 4) != "blk.") return std::nullopt;
  size_t i = 4;
  while (i < n.size() && (n[i] == ' ' || (n[i] >= '\t' && n[i] <= '\r'))) ++i;
  bool neg = false;
  if (i < n.size() && (n[i] == '-' || n[i] == '+')) neg = n[i++] == '-';
  const size_t digits = i;
  long long v = 0;
  for (; i < n.size() && n[i] >= '0' && n[i] <= '9'; ++i) v = std::min(v * 10 + (n[i] - '0'), 1LL << 40);
  if (i == digits) return std::nullopt;
  return neg ? -v : v;
}

struct State {
  int n_attention_wv = 0, n_ffn = 0;
  int i_attention_wv = 0, i_ffn_down = 0, i_ffn_gate = 0, i_ffn_up = 0;
  bool tied_embeddings = true;
};

bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// llama_tensor_get_type_impl, branch for branch.
Result<T> choose(State& qs, const GgufMixSettings& s, const GgufMixModel& m, T new_type, const GgufMixTensor& t, Cat cat) {
  const uint32_t ftype = s.file_type->ftype;
  const bool falcon = m.arch == "falcon";
  const int n_expert = std::max<int>(1, static_cast<int>(m.n_expert));
  auto layer_info = [&](int i_layer, int n_layer) -> Result<std::pair<int, int>> {
    if (n_expert > 1) {
      const auto l = blk_layer(t.name);
      if (!l) return make_error(ErrorCode::invalid_argument, "llama-quantize: failed to determine the layer of tensor '" + std::string(t.name) + "'");
      if (*l < 0 || *l >= n_layer) {
        return make_error(ErrorCode::invalid_argument, "llama-quantize: bad layer " + std::to_string(*l) + " for tensor '" +
                                                           std::string(t.name) + "' (must be in [0, " + std::to_string(n_layer) + "))");
      }
      i_layer = static_cast<int>(*l);
    }
    return std::pair{i_layer, n_layer};
  };
  auto any = [ftype](std::initializer_list<uint32_t> fs) { return std::find(fs.begin(), fs.end(), ftype) != fs.end(); };
  const uint32_t gqa = m.n_gqa();

  if (cat == Cat::output || (qs.tied_embeddings && cat == Cat::token_embd)) {
    if (s.output_type) {
      new_type = *s.output_type;
    } else {
      const uint64_t qk_k = ggml_traits(new_type)->block_elements;
      if (ftype == MXFP4_MOE) new_type = T::Q8_0;
      else if (falcon || t.ncols % qk_k != 0) new_type = T::Q8_0;
      else if (any({IQ2_XXS, IQ2_XS, IQ3_XXS, IQ1_S, IQ2_S, IQ2_M, IQ1_M})) new_type = T::Q5_K;
      else if (new_type != T::Q8_0) new_type = T::Q6_K;
    }
  } else if (ftype == MXFP4_MOE) {
    // MoE (3-D expert) tensors MXFP4, the rest Q8_0; bailingmoe3's 3-D MLA projections
    // are not experts.
    const bool bailing = m.arch == "bailingmoe3";
    const bool bailing_expert = bailing && (cat == Cat::ffn_up || cat == Cat::ffn_gate || cat == Cat::ffn_down);
    new_type = t.ne2 > 1 && (!bailing || bailing_expert) ? T::MXFP4 : T::Q8_0;
  } else if (cat == Cat::token_embd) {
    if (s.token_embd_type) new_type = *s.token_embd_type;
    else if (any({IQ2_XXS, IQ2_XS, IQ1_S, IQ1_M})) new_type = T::Q2_K;
    else if (any({IQ2_S, IQ2_M})) new_type = T::IQ3_S;
    else if (ftype == IQ3_XXS) new_type = T::IQ3_S;
    else if (any({TQ1_0, TQ2_0, Q2_0})) new_type = T::Q4_K;
  } else if (any({IQ2_XXS, IQ2_XS, IQ1_S, IQ2_S, IQ2_M, IQ1_M})) {
    if (is_attn_v(cat)) {
      if (gqa >= 4 || m.n_expert >= 4) new_type = T::Q4_K;
      else new_type = any({IQ2_S, IQ2_M}) ? T::IQ3_S : T::Q2_K;
      ++qs.i_attention_wv;
    } else if (m.n_expert == 8 && cat == Cat::attn_k) {
      new_type = T::Q4_K;
    } else if (cat == Cat::ffn_down) {
      if (qs.i_ffn_down < qs.n_ffn / 8) new_type = any({IQ2_S, IQ2_M}) ? T::IQ3_S : T::Q2_K;
      ++qs.i_ffn_down;
    } else if (cat == Cat::attn_output) {
      if (m.n_expert == 8) new_type = T::Q5_K;
      else if (any({IQ1_S, IQ1_M})) new_type = T::IQ2_XXS;
      else if (any({IQ2_S, IQ2_M})) new_type = T::IQ3_S;
    }
  } else if (is_attn_v(cat)) {
    if (ftype == Q2_K) new_type = gqa >= 4 ? T::Q4_K : T::Q3_K;
    else if (ftype == Q2_K_S && gqa >= 4) new_type = T::Q4_K;
    else if (ftype == IQ3_XXS) new_type = gqa >= 4 ? T::Q4_K : !s.has_imatrix ? T::IQ3_S : T::IQ3_XXS;
    else if (any({IQ3_XS, IQ3_S}) && gqa >= 4) new_type = T::Q4_K;
    else if (ftype == IQ3_M) new_type = T::Q4_K;
    else if (ftype == Q3_K_M) new_type = qs.i_attention_wv < 2 ? T::Q5_K : T::Q4_K;
    else if (ftype == Q3_K_L) new_type = T::Q5_K;
    else if (any({IQ4_NL, IQ4_XS}) && gqa >= 4) new_type = T::Q5_K;
    else if (any({Q4_K_M, Q5_K_M}) && use_more_bits(qs.i_attention_wv, qs.n_attention_wv)) new_type = T::Q6_K;
    else if (ftype == Q4_K_S && qs.i_attention_wv < 4) new_type = T::Q5_K;
    if (m.is_70b && (new_type == T::Q3_K || new_type == T::Q4_K)) new_type = T::Q5_K;
    if (m.n_expert == 8) new_type = T::Q8_0;
    ++qs.i_attention_wv;
  } else if (cat == Cat::attn_k) {
    if (m.n_expert == 8) new_type = T::Q8_0;
    else if (ftype == IQ3_XS) new_type = T::IQ3_XXS;
    else if (ftype == IQ3_XXS) new_type = T::IQ2_S;
  } else if (cat == Cat::attn_q) {
    if (ftype == IQ3_XS) new_type = T::IQ3_XXS;
    else if (ftype == IQ3_XXS) new_type = T::IQ2_S;
  } else if (cat == Cat::ffn_down) {
    AMN_ASSIGN(auto info, layer_info(qs.i_ffn_down, qs.n_ffn));
    const int i_layer = info.first, n_layer = info.second;
    if (ftype == Q2_K) new_type = T::Q3_K;
    else if (ftype == Q2_K_S) {
      if (i_layer < n_layer / 8) new_type = T::Q4_K;
    } else if (ftype == IQ3_XXS && !s.has_imatrix) {
      new_type = i_layer < n_layer / 8 ? T::Q4_K : T::Q3_K;
    } else if (ftype == Q3_K_M) {
      new_type = i_layer < n_layer / 16 ? T::Q5_K : !falcon || use_more_bits(i_layer, n_layer) ? T::Q4_K : T::Q3_K;
    } else if (ftype == IQ3_M && (i_layer < n_layer / 8 || (m.n_expert == 8 && use_more_bits(i_layer, n_layer)))) {
      new_type = T::Q4_K;
    } else if (ftype == Q3_K_L) {
      new_type = falcon ? T::Q4_K : T::Q5_K;
    } else if (ftype == Q4_K_M) {
      if (falcon) {
        new_type = i_layer < n_layer / 16 ? T::Q6_K : use_more_bits(i_layer, n_layer) ? T::Q5_K : T::Q4_K;
      } else if (use_more_bits(i_layer, n_layer)) {
        new_type = T::Q6_K;
      }
    } else if (i_layer < n_layer / 8 && any({IQ4_NL, IQ4_XS}) && !s.has_imatrix) {
      new_type = T::Q5_K;
    } else if (ftype == Q5_K_M && use_more_bits(i_layer, n_layer)) {
      new_type = T::Q6_K;
    } else if (ftype == Q4_K_S && !falcon && i_layer < n_layer / 8) {
      new_type = T::Q5_K;
    } else if (any({Q4_0, Q5_0}) && s.has_imatrix && i_layer < n_layer / 8) {
      new_type = ftype == Q4_0 ? T::Q4_1 : T::Q5_1;
    }
    ++qs.i_ffn_down;
  } else if (cat == Cat::attn_output) {
    if (!falcon) {
      if (m.n_expert == 8) {
        if (any({Q2_K, IQ3_XS, IQ3_XXS, Q3_K_S, Q3_K_M, IQ4_NL, Q4_K_S, Q4_K_M, IQ3_S, IQ3_M, IQ4_XS})) new_type = T::Q5_K;
      } else {
        if (ftype == Q2_K) new_type = T::Q3_K;
        else if (ftype == IQ3_XXS) new_type = T::IQ3_S;
        else if (ftype == Q3_K_M) new_type = T::Q4_K;
        else if (ftype == Q3_K_L) new_type = T::Q5_K;
        else if (ftype == IQ3_M) new_type = T::Q4_K;
      }
    } else if (ftype == Q3_K_L) {
      new_type = T::Q4_K;
    }
  } else if (cat == Cat::attn_qkv) {
    if (any({Q3_K_M, Q3_K_L, IQ3_M})) new_type = T::Q4_K;
    else if (ftype == Q4_K_M) new_type = T::Q5_K;
    else if (ftype == Q5_K_M) new_type = T::Q6_K;
  } else if (cat == Cat::ffn_gate || cat == Cat::ffn_up) {
    int& counter = cat == Cat::ffn_gate ? qs.i_ffn_gate : qs.i_ffn_up;
    AMN_ASSIGN(auto info, layer_info(counter, qs.n_ffn));
    if (ftype == IQ3_XS && info.first >= info.second / 8 && info.first < 7 * info.second / 8) new_type = T::IQ3_XXS;
    ++counter;
  }
  return new_type;
}

// tensor_requires_imatrix.
bool requires_imatrix(std::string_view name, T type, uint32_t ftype) {
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight" || name == "output.weight") return false;
  switch (type) {
    case T::IQ3_XXS: case T::IQ2_XXS: case T::IQ2_XS: case T::IQ2_S: case T::IQ1_M: case T::IQ1_S: return true;
    case T::Q2_K: return ftype == Q2_K_S;
    default: return false;
  }
}

}  // namespace

std::span<const GgufFileTypeRow> gguf_file_type_rows() { return kRows; }

const GgufFileTypeRow* gguf_file_type_row(std::string_view name) {
  for (const GgufFileTypeRow& r : kRows) {
    if (iequals(r.name, name)) return &r;
  }
  return nullptr;
}

bool gguf_tensor_requires_imatrix(std::string_view name, GgmlType type, uint32_t ftype) {
  return requires_imatrix(name, type, ftype);
}

bool gguf_file_type_needs_imatrix(const GgufFileTypeRow& row) {
  return requires_imatrix("blk.0.ffn_up.weight", row.default_type, row.ftype);
}

std::string gguf_file_type_names() {
  std::string out;
  for (const GgufFileTypeRow& r : kRows) out += (out.empty() ? "" : ", ") + std::string(r.name);
  return out;
}

GgmlType gguf_fallback_type(GgmlType target, uint64_t ncols) {
  const GgmlTraits& t = *ggml_traits(target);
  if (!t.quantized || ncols % t.block_elements == 0) return target;
  GgmlType to = T::F16;
  switch (target) {
    case T::IQ1_S: case T::IQ1_M: case T::IQ2_XXS: case T::IQ2_XS:
    case T::IQ2_S: case T::IQ3_XXS: case T::IQ3_S: case T::IQ4_XS:
      to = T::IQ4_NL;
      break;
    case T::Q2_0: case T::Q2_K: case T::Q3_K: case T::TQ1_0: case T::TQ2_0:
      to = T::Q4_0;
      break;
    case T::Q4_K: to = T::Q5_0; break;
    case T::Q5_K: to = T::Q5_1; break;
    case T::Q6_K: to = T::Q8_0; break;
    default: return kNoGgmlType;  // llama-quantize: "no tensor type fallback is defined"
  }
  return ncols % ggml_traits(to)->block_elements == 0 ? to : T::F16;
}

Result<std::vector<GgufMixChoice>> gguf_mix_types(const GgufMixSettings& s, const GgufMixModel& m,
                                                  std::span<const GgufMixTensor> tensors) {
  if (!s.file_type) return make_error(ErrorCode::internal, "gguf_mix_types without a file type");
  // llama-quantize walks the loader's weights_map: by layer, then by name. The counters
  // (i_attention_wv, i_ffn_down, ...) advance in that order, not the file's.
  const auto order = gguf_loader_order_of(tensors.size(), [&](size_t i) { return tensors[i].name; });

  State qs;  // init_quantize_state_counters: over every tensor, quantized or not
  for (const GgufMixTensor& t : tensors) {
    const Cat c = category(t.name);
    if (is_attn_v(c)) ++qs.n_attention_wv;
    if (c == Cat::output) qs.tied_embeddings = false;
  }
  qs.n_ffn = static_cast<int>(m.n_layer);

  std::vector<GgufMixChoice> out(tensors.size());
  const T default_type = s.file_type->default_type;
  for (size_t k : order) {
    const GgufMixTensor& t = tensors[k];
    const Cat c = category(t.name);
    bool allowed = t.quantizable && (s.quantize_output || t.name != "output.weight");
    if (!allowed) continue;
    T type;
    // llama_tensor_get_type: the user's types first, unchecked against the shape.
    if (s.token_embd_type && c == Cat::token_embd) {
      type = *s.token_embd_type;
    } else if (s.output_type && c == Cat::output) {
      type = *s.output_type;
    } else {
      type = default_type;
      if (ggml_traits(default_type)->quantized) {
        AMN_ASSIGN(const auto manual, s.tensor_types.match(t.name));
        if (manual) {
          type = s.tensor_type_types.at(*manual);
        } else if (!s.pure) {
          AMN_ASSIGN(type, choose(qs, s, m, type, t, c));
        }
        type = gguf_fallback_type(type, t.ncols);
      }
    }
    out[k].type = type;
    out[k].requires_imatrix = type != kNoGgmlType && requires_imatrix(t.name, type, s.file_type->ftype);
  }
  return out;
}

bool gguf_loader_order(std::string_view a, std::string_view b) {
  const long long la = blk_layer(a).value_or(-1), lb = blk_layer(b).value_or(-1);
  return la != lb ? la < lb : a < b;
}

}  // namespace amn
