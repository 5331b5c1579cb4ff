#include "schemes/forget_like.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include <simdjson.h>

#include "core/bytes.h"
#include "core/text.h"
#include "kernels/lethe/bnb_encode.h"
#include "kernels/lethe/fp8_ct_encode.h"
#include "kernels/lethe/fp8_encode.h"
#include "kernels/lethe/mlx_encode.h"
#include "kernels/lethe/mlx_fp_encode.h"
#include "kernels/lethe/mxfp4_encode.h"
#include "kernels/lethe/nvfp4_encode.h"
#include "kernels/quant/bnb.h"
#include "kernels/quant/fp4.h"
#include "kernels/quant/fp8.h"
#include "kernels/quant/mlx.h"
#include "kernels/quant/mlx_fp.h"
#include "schemes/bnb_state.h"
#include "schemes/forget_gguf.h"
#include "schemes/forget_util.h"

namespace amn {
namespace {

// One of REF's quantized weights.
struct LikeWeight {
  std::string scheme;               // a forget scheme name: nf4, fp4, int8, fp8-block, nvfp4
  std::vector<uint64_t> shape;      // logical
  ForgetSettings settings;
  // --reuse-scales: what REF stores, and the scales the weight is quantized with.
  std::vector<TensorSpec> specs;    // REF's records, the weight first
  std::vector<std::vector<uint8_t>> bytes;  // the companions' bytes (bytes[0] unused)
  std::vector<float> scales;        // bnb4: resolved absmax; int8: SCB; fp8: multiplying scale per tile
  std::vector<float> scale_inv;     // fp8: REF's weight_scale_inv
  DType scale_dtype = DType::F32;   // fp8-channel / fp8-tensor: the dtype the producer computed in
  uint64_t blocksize = 0;           // bnb4
  quant::Bnb4Type type = quant::Bnb4Type::nf4;
  lethe::Fp8Block block;
  std::vector<uint8_t> scale_codes;  // nvfp4: REF's E4M3 weight_scale; mxfp4: its E8M0 scales; mlx: scales
  std::vector<uint8_t> biases;       // mlx: REF's biases (scale_dtype, as the scales)
  float global_scale = 1.0f;         // nvfp4: REF's weight_global_scale
  std::vector<uint8_t> codes;        // --reuse-scales: REF's weight (its codes), as stored
  quant::MlxFpMode fp_mode = quant::MlxFpMode::mxfp4;  // mlx with settings.mode set
};

float f32_at(const std::vector<uint8_t>& b, size_t i) {
  float f;
  std::memcpy(&f, b.data() + i * 4, 4);
  return f;
}

// The code of element k of a packed run, `bits` wide: bitsandbytes puts element 0 in the
// high nibble (high_first), every other layout in the low bits (a little-endian bit
// stream: MLX's 3-, 5- and 6-bit codes cross bytes).
uint32_t code_at(const uint8_t* p, uint64_t k, unsigned bits, bool high_first) {
  if (bits == 8) return p[k];
  if (high_first) return (p[k / 2] >> (k % 2 ? 0 : 4)) & 0xF;
  const uint64_t bit = k * bits;
  const uint32_t v = p[bit / 8] | (bit % 8 + bits > 8 ? uint32_t{p[bit / 8 + 1]} << 8 : 0u);
  return (v >> (bit % 8)) & ((1u << bits) - 1);
}
void set_code(uint8_t* p, uint64_t k, unsigned bits, bool high_first, uint32_t code) {
  if (bits == 8) {
    p[k] = static_cast<uint8_t>(code);
    return;
  }
  if (high_first) {
    const unsigned shift = k % 2 ? 0 : 4;
    p[k / 2] = static_cast<uint8_t>((p[k / 2] & ~(0xF << shift)) | (code << shift));
    return;
  }
  for (unsigned i = 0; i < bits; ++i) {
    const uint64_t bit = k * bits + i;
    const uint8_t mask = static_cast<uint8_t>(1u << (bit % 8));
    p[bit / 8] = static_cast<uint8_t>(((code >> i) & 1) ? p[bit / 8] | mask : p[bit / 8] & ~mask);
  }
}

// --reuse-scales: every value that REF's own code gives back exactly (the same bits, or
// NaN for NaN) keeps that code. Where values cannot tell codes apart — a zero or non-finite
// scale, a dequantized absmax below zero or in the subnormals, ±0 — the encoder's code
// gives the same value or a worse one, and forget(remember(REF)) must be REF; elsewhere the
// encoder's choice stands. `ref_back` is REF's codes dequantized with the same scales.
void keep_reference_codes(const float* values, const float* ref_back, uint64_t n, const uint8_t* ref, uint8_t* out,
                          unsigned bits, bool high_first) {
  for (uint64_t k = 0; k < n; ++k) {
    const bool same = std::isnan(values[k]) ? std::isnan(ref_back[k])
                                            : bit_cast<uint32_t>(values[k]) == bit_cast<uint32_t>(ref_back[k]);
    if (same) set_code(out, k, bits, high_first, code_at(ref, k, bits, high_first));
  }
}

// The weight's encoding with REF's scales; the companions are REF's bytes.
class ReuseOp final : public EncodeOp {
 public:
  explicit ReuseOp(std::shared_ptr<const LikeWeight> w) : w_(std::move(w)) {
    cols_ = w_->shape.back();
    rows_ = cols_ ? (w_->scheme == "nf4" || w_->scheme == "fp4" ? 0 : w_->shape[0]) : 0;
  }
  std::span<const TensorSpec> outputs() const override { return w_->specs; }
  uint64_t granularity(size_t part) const override {
    if (part != 0) return std::max<uint64_t>(1, w_->specs[part].nbytes);
    if (w_->scheme == "int8" || w_->scheme == "fp8-channel" || w_->scheme == "fp8-tensor") return cols_;
    if (w_->scheme == "fp8-block") return w_->block.rows * cols_;
    if (w_->scheme == "nvfp4" || w_->scheme == "mxfp4") return cols_ / 2;
    if (w_->scheme == "mlx") return cols_ * w_->settings.bits / 8;
    return w_->blocksize / 2;
  }
  LetheSums distance() const override { return sums_.total(); }

  Status run(std::span<const uint8_t> source, DType from, size_t part, uint64_t begin, uint64_t end,
             uint8_t* out) const override {
    if (part != 0) {
      std::memcpy(out, w_->bytes[part].data() + begin, end - begin);
      return {};
    }
    LetheSums sums;
    const LikeWeight& w = *w_;
    // REF's codes for these output bytes (empty when REF's weight was not read).
    const uint8_t* ref = w.codes.empty() ? nullptr : w.codes.data() + begin;
    // Encoded: REF's code kept where it gives the value back (keep_reference_codes), then
    // what was lost, from the codes written. Where the encoder already wrote REF's bytes
    // (the round trip's usual case) there is nothing to keep, and REF is not decoded.
    const auto finish = [&](const float* values, uint64_t n, unsigned bits, bool high_first, const auto& decode) {
      std::vector<float> back(n);
      if (ref && std::memcmp(out, ref, end - begin) != 0) {
        decode(ref, back.data());
        keep_reference_codes(values, back.data(), n, ref, out, bits, high_first);
      }
      decode(out, back.data());
      for (uint64_t k = 0; k < n; ++k) sums.add(values[k], back[k]);
    };
    if (w.scheme == "nf4" || w.scheme == "fp4") {
      const uint64_t n = w.specs.empty() ? 0 : elements();
      const uint64_t e0 = begin * 2, e1 = std::min(end * 2, n);
      std::vector<float> values(e1 - e0);
      load_f32(source, from, e0, e1 - e0, values.data());
      const float* absmax = w.scales.data() + e0 / w.blocksize;
      // An exact -0.0 takes code 8 (which dequantizes to -0.0): what remember made of REF.
      lethe::bnb4_quantize_with_absmax(w.type, values.data(), e1 - e0, w.blocksize, absmax, out, true);
      const quant::Bnb4Params p{w.type, e1 - e0, w.blocksize};
      const std::span<const float> am(absmax, static_cast<size_t>((e1 - e0 + w.blocksize - 1) / w.blocksize));
      finish(values.data(), e1 - e0, 4, true, [&](const uint8_t* codes, float* dst) {
        quant::dequantize_bnb4(p, codes, am, 0, e1 - e0, DType::F32, reinterpret_cast<uint8_t*>(dst));
      });
    } else if (w.scheme == "int8") {
      const uint64_t r0 = begin / cols_, r1 = end / cols_;
      std::vector<float> values((r1 - r0) * cols_);
      load_f32(source, from, r0 * cols_, values.size(), values.data());
      for (uint64_t r = r0; r < r1; ++r) {
        lethe::bnb_int8_quantize_row_with_scb(values.data() + (r - r0) * cols_, cols_, w.scales[r],
                                              reinterpret_cast<int8_t*>(out + (r - r0) * cols_));
      }
      finish(values.data(), values.size(), 8, false, [&](const uint8_t* codes, float* dst) {
        quant::dequantize_bnb_int8_rows(cols_, codes, reinterpret_cast<const uint8_t*>(w.scales.data()), r0, r1,
                                        DType::F32, reinterpret_cast<uint8_t*>(dst));
      });
    } else if (w.scheme == "fp8-channel" || w.scheme == "fp8-tensor") {
      const bool per_row = w.scheme == "fp8-channel";
      const uint64_t r0 = begin / cols_, r1 = end / cols_;
      std::vector<float> values((r1 - r0) * cols_);
      load_f32(source, from, r0 * cols_, values.size(), values.data());
      const float* scale = w.scales.data() + (per_row ? r0 : 0);
      lethe::ct_fp8_quantize_rows(values.data(), cols_, r0, r1, w.scale_dtype, scale, per_row, false, out);
      finish(values.data(), values.size(), 8, false, [&](const uint8_t* codes, float* dst) {
        for (uint64_t k = 0; k < values.size(); ++k) {
          dst[k] = quant::fp8_to_f32(DType::F8_E4M3, codes[k]) * (per_row ? scale[k / cols_] : scale[0]);
        }
      });
    } else if (w.scheme == "nvfp4") {
      const uint64_t r0 = begin / (cols_ / 2), r1 = end / (cols_ / 2);
      std::vector<float> values((r1 - r0) * cols_);
      load_f32(source, from, r0 * cols_, values.size(), values.data());
      const uint8_t* scale = w.scale_codes.data() + r0 * (cols_ / 16);
      // An exact -0.0 takes code 8 (which decompresses to -0.0): what remember made of REF.
      lethe::nvfp4_quantize_rows(values.data(), cols_, r0, r1, scale, w.global_scale, out, true);
      const quant::Nvfp4Params p{quant::Nvfp4Layout::compressed_tensors, rows_, cols_, w.global_scale};
      finish(values.data(), values.size(), 4, false, [&](const uint8_t* codes, float* dst) {
        quant::dequantize_nvfp4_rows(p, codes, scale, r0, r1, DType::F32, reinterpret_cast<uint8_t*>(dst));
      });
    } else if (w.scheme == "mxfp4") {
      const uint64_t r0 = begin / (cols_ / 2), r1 = end / (cols_ / 2);
      std::vector<float> values((r1 - r0) * cols_);
      load_f32(source, from, r0 * cols_, values.size(), values.data());
      std::vector<uint8_t> scales(w.scale_codes.begin() + static_cast<ptrdiff_t>(r0 * (cols_ / 32)),
                                  w.scale_codes.begin() + static_cast<ptrdiff_t>(r1 * (cols_ / 32)));
      lethe::mxfp4_quantize_rows(values.data(), r1 - r0, cols_, out, scales.data(), true);
      finish(values.data(), values.size(), 4, false, [&](const uint8_t* codes, float* dst) {
        quant::dequantize_mxfp4_rows({r1 - r0, cols_ / 32}, codes, scales.data(), 0, r1 - r0, DType::F32,
                                     reinterpret_cast<uint8_t*>(dst));
      });
    } else if (w.scheme == "mlx" && !w.settings.mode.empty()) {
      // A floating-point mode: REF's U8 scales, the codes in the input's dtype as mx.quantize's.
      const auto& f = quant::mlx_fp_format(w.fp_mode);
      const uint64_t row_bytes = cols_ * f.bits / 8, r0 = begin / row_bytes, r1 = end / row_bytes;
      std::vector<float> values((r1 - r0) * cols_);
      load_f32(source, from, r0 * cols_, values.size(), values.data());
      std::vector<uint8_t> scales(w.scale_codes.begin() + static_cast<ptrdiff_t>(r0 * (cols_ / f.group_size)),
                                  w.scale_codes.begin() + static_cast<ptrdiff_t>(r1 * (cols_ / f.group_size)));
      lethe::mlx_fp_quantize_rows(w.fp_mode, values.data(), r1 - r0, cols_, from, out, scales.data(), true);
      finish(values.data(), values.size(), f.bits, false, [&](const uint8_t* codes, float* dst) {
        quant::dequantize_mlx_fp_rows(w.fp_mode, cols_, codes, scales.data(), 0, r1 - r0, DType::F32,
                                      reinterpret_cast<uint8_t*>(dst));
      });
    } else if (w.scheme == "mlx") {
      const uint32_t bits = w.settings.bits;
      const uint64_t group = w.settings.group_size, row_bytes = cols_ * bits / 8;
      const uint64_t r0 = begin / row_bytes, r1 = end / row_bytes;
      const uint64_t scale_row = (cols_ / group) * dtype_info(w.scale_dtype).block_bytes;
      std::vector<float> values((r1 - r0) * cols_);
      load_f32(source, from, r0 * cols_, values.size(), values.data());
      std::vector<uint8_t> scales(w.scale_codes.begin() + static_cast<ptrdiff_t>(r0 * scale_row),
                                  w.scale_codes.begin() + static_cast<ptrdiff_t>(r1 * scale_row));
      std::vector<uint8_t> biases(w.biases.begin() + static_cast<ptrdiff_t>(r0 * scale_row),
                                  w.biases.begin() + static_cast<ptrdiff_t>(r1 * scale_row));
      lethe::mlx_affine_quantize_rows(values.data(), r1 - r0, cols_, bits, group, w.scale_dtype, out, scales.data(),
                                      biases.data(), true);
      const quant::MlxParams q{bits, group, r1 - r0, cols_, w.scale_dtype};
      Status decoded;
      finish(values.data(), values.size(), bits, false, [&](const uint8_t* codes, float* dst) {
        auto st = quant::dequantize_mlx_rows(q, {{codes, static_cast<size_t>((r1 - r0) * row_bytes)}, scales, biases}, 0, r1 - r0,
                                             DType::F32, {reinterpret_cast<uint8_t*>(dst), values.size() * 4});
        if (!st) decoded = st;
      });
      AMN_TRY(decoded);
    } else {  // fp8-block
      const uint64_t r0 = begin / cols_, r1 = end / cols_;
      const uint64_t tiles = (cols_ + w.block.cols - 1) / w.block.cols;
      std::vector<float> values((r1 - r0) * cols_);
      load_f32(source, from, r0 * cols_, values.size(), values.data());
      for (uint64_t b0 = r0; b0 < r1; b0 += w.block.rows) {
        const uint64_t b1 = std::min(r1, b0 + w.block.rows);
        const float* scale = w.scales.data() + (b0 / w.block.rows) * tiles;
        lethe::fp8_block_quantize_rows(values.data() + (b0 - r0) * cols_, cols_, b0, b1, w.block, scale, out + (b0 - r0) * cols_);
      }
      finish(values.data(), values.size(), 8, false, [&](const uint8_t* codes, float* dst) {
        for (uint64_t k = 0; k < values.size(); ++k) {
          const uint64_t r = r0 + k / cols_, c = k % cols_;
          dst[k] = quant::fp8_to_f32(DType::F8_E4M3, codes[k]) * w.scale_inv[(r / w.block.rows) * tiles + c / w.block.cols];
        }
      });
    }
    sums_.put(begin, sums);
    return {};
  }

 private:
  uint64_t elements() const {
    uint64_t n = 1;
    for (uint64_t d : w_->shape) n *= d;
    return n;
  }
  std::shared_ptr<const LikeWeight> w_;
  uint64_t rows_ = 0, cols_ = 0;
  mutable SumsByPiece sums_;
};

class LikeForgetter final : public Forgetter {
 public:
  LikeForgetter(std::map<std::string, std::shared_ptr<const LikeWeight>> weights, bool reuse, std::string config)
      : weights_(std::move(weights)), reuse_(reuse), config_(std::move(config)) {}

  std::string default_keep_reason(const TensorRecord& t) const override {
    return weights_.count(t.name) ? "" : "not quantized in the reference";
  }
  std::string cannot_hold(const TensorRecord& t) const override {
    auto it = weights_.find(t.name);
    if (it == weights_.end()) return "not quantized in the reference";
    if (it->second->shape != t.shape) return "its shape differs from the reference's";
    // Reusing REF's scales writes REF's layout, whatever shapes the producer refuses.
    if (reuse_ && is_forgettable_dtype(t.dtype) && t.block_type.empty()) return {};
    return own(*it->second)->cannot_hold(t);
  }
  std::shared_ptr<const EncodeOp> encode(const TensorRecord& t) const override {
    const auto& w = weights_.at(t.name);
    if (reuse_) return std::make_shared<ReuseOp>(w);
    return own(*w)->encode(t);
  }
  // Without --reuse-scales, each of REF's schemes makes the ops of its weights together
  // (NVFP4's fused sets share a global scale).
  Result<std::vector<std::shared_ptr<const EncodeOp>>> encode_chosen(
      const Model& model, std::span<const TensorRecord* const> chosen) const override {
    std::vector<std::shared_ptr<const EncodeOp>> ops(chosen.size());
    std::map<const Forgetter*, std::vector<size_t>> by_scheme;
    for (size_t i = 0; i < chosen.size(); ++i) {
      const auto& w = weights_.at(chosen[i]->name);
      if (reuse_) ops[i] = std::make_shared<ReuseOp>(w);
      else by_scheme[own(*w)].push_back(i);
    }
    for (const auto& [f, indices] : by_scheme) {
      std::vector<const TensorRecord*> these;
      for (size_t i : indices) these.push_back(chosen[i]);
      AMN_ASSIGN(auto made, f->encode_chosen(model, these));
      for (size_t k = 0; k < indices.size(); ++k) ops[indices[k]] = std::move(made[k]);
    }
    return ops;
  }
  std::string quantization_config_json() const override {
    if (!config_.empty()) return config_;
    return own(*weights_.begin()->second)->quantization_config_json();
  }
  std::vector<std::string> quantization_config_mirrors() const override {
    return own(*weights_.begin()->second)->quantization_config_mirrors();
  }
  std::string describe() const override {
    std::map<std::string, int> count;
    for (const auto& [_, w] : weights_) ++count[own(*w)->describe()];
    std::string out = "like the reference";
    for (const auto& [d, n] : count) out += (out.size() > 18 ? "; " : ": ") + d + " x" + std::to_string(n);
    return out + (reuse_ ? " (its scales reused)" : "");
  }
  Status check_input(const Model& input) const override {
    for (const auto& [name, w] : weights_) {
      const TensorRecord* t = input.find(name);
      if (!t) return make_error(ErrorCode::invalid_argument, "--like: the reference quantizes " + quote(name) + ", which the input lacks");
      if (t->shape != w->shape) {
        return make_error(ErrorCode::invalid_argument, "--like: " + quote(name) + " is " + dims_text(t->shape) +
                                                           " in the input, " + dims_text(w->shape) + " in the reference");
      }
    }
    return {};
  }

 private:
  const Forgetter* own(const LikeWeight& w) const {
    auto key = w.scheme + "/" + std::to_string(w.settings.blocksize) + "/" + (w.settings.double_quant ? "1" : "0") +
               "/" + std::to_string(w.settings.bits) + "/" + std::to_string(w.settings.group_size) + "/" + w.settings.mode;
    auto it = own_.find(key);
    if (it == own_.end()) it = own_.emplace(key, std::move(make_forgetter(w.settings)).value()).first;
    return it->second.get();
  }
  std::map<std::string, std::shared_ptr<const LikeWeight>> weights_;
  bool reuse_;
  std::string config_;
  mutable std::map<std::string, std::unique_ptr<Forgetter>> own_;
};

// The records a reference weight is written back with, but the weight itself: its
// companions in the order detection listed them, then the activation scales REF keeps
// beside it (input_scale, k_scale, ...), which remember drops and --reuse-scales restores.
std::vector<uint32_t> companion_records(const Model& ref, const LogicalTensor& l) {
  std::vector<uint32_t> out;
  for (const auto& [role, record] : l.parts) {
    if (role != "weight") out.push_back(record);
  }
  const std::string module = module_of(l.name) + ".";
  for (size_t i = 0; i < ref.tensors.size() && i < ref.part_of.size(); ++i) {
    if (ref.part_of[i] == Model::kConsumedCompanion && ref.tensors[i].name.starts_with(module)) {
      out.push_back(static_cast<uint32_t>(i));
    }
  }
  return out;
}

// The record holding a weight's codes: compressed-tensors' weight_packed, gpt-oss' blocks,
// else the weight itself.
uint32_t code_record(const LogicalTensor& l) {
  uint32_t weight = 0;
  for (const auto& [role, record] : l.parts) {
    if (role == "weight_packed" || role == "blocks") return record;
    if (role == "weight") weight = record;
  }
  return weight;
}

// REF's quantization_config, verbatim, or "".
std::string ref_quantization_config(const Model& ref) {
  simdjson::dom::parser parser;
  simdjson::dom::element q;
  if (ref.config_json.empty() || parser.parse(ref.config_json)["quantization_config"].get(q)) return {};
  return simdjson::to_string(q);
}

// weight_block_size from REF's quantization_config, or {0, 0}.
lethe::Fp8Block config_block(const Model& ref) {
  simdjson::dom::parser parser;
  simdjson::dom::array size;
  if (ref.config_json.empty() || parser.parse(ref.config_json)["quantization_config"]["weight_block_size"].get(size) ||
      size.size() != 2) {
    return {0, 0};
  }
  uint64_t r = 0, c = 0;
  if (size.at(0).get_uint64().get(r) || size.at(1).get_uint64().get(c) || r == 0 || c == 0) return {0, 0};
  return {r, c};
}

}  // namespace

bool like_writes_gguf(const Model& ref) { return ref.format == ModelFormat::gguf; }

Result<std::unique_ptr<Forgetter>> make_like_forgetter(const Model& ref, FileSet& files, bool reuse, std::string_view scheme) {
  if (like_writes_gguf(ref)) return make_gguf_like_forgetter(ref, files, reuse, scheme);
  // Every companion of every weight, in one read (one need_bytes round in JS): they are
  // small. The weights themselves (REF's codes) only with --reuse-scales, after them: the
  // codes REF's values need back (keep_reference_codes). That holds all of REF's quantized
  // bytes while the plan lives (docs/cli.md says so).
  std::vector<ByteRange> ranges;
  for (const auto& l : ref.logical) {
    for (uint32_t r : companion_records(ref, l)) ranges.push_back({ref.tensors[r].file, ref.tensors[r].offset, ref.tensors[r].nbytes});
  }
  const size_t companions = ranges.size();
  if (reuse) {
    for (const auto& l : ref.logical) {
      const TensorRecord& t = ref.tensors[code_record(l)];
      ranges.push_back({t.file, t.offset, t.nbytes});
    }
  }
  AMN_ASSIGN(auto copies, read_copies(files, ranges));
  size_t next_codes = companions;
  size_t next = 0;  // copies[next] is the next weight's first companion
  std::map<std::string, std::shared_ptr<const LikeWeight>> weights;
  for (const auto& l : ref.logical) {
    if (!l.error.empty()) return make_error(ErrorCode::invalid_argument, "--like: " + quote(l.name) + ": " + l.error);
    std::map<std::string, uint32_t> part;
    for (const auto& [role, record] : l.parts) part[role] = record;
    auto w = std::make_shared<LikeWeight>();
    w->shape = l.shape;
    if (l.scheme == "bnb-nf4" || l.scheme == "bnb-fp4") w->scheme = l.scheme.substr(4);
    else if (l.scheme == "bnb-int8") w->scheme = "int8";
    else if (l.scheme == "fp8" && part.count("scale_inv") && ref.tensors[part["weight"]].dtype == DType::F8_E4M3) w->scheme = "fp8-block";
    else if (l.scheme == "fp8" && part.count("scale") && ref.tensors[part["weight"]].dtype == DType::F8_E4M3 &&
             l.shape.size() == 2) {
      // compressed-tensors: [rows, 1] per channel, a single value per tensor.
      const TensorRecord& sc = ref.tensors[part["scale"]];
      if (sc.elements == l.shape[0] && l.shape[0] > 1) w->scheme = "fp8-channel";
      else if (sc.elements == 1) w->scheme = "fp8-tensor";
    } else if (l.scheme == "nvfp4" && part.count("weight_packed") && part.count("weight_global_scale")) {
      w->scheme = "nvfp4";  // compressed-tensors (ModelOpt's `weight` / `weight_scale_2` is not written)
    } else if (l.scheme == "mxfp4" && part.count("blocks") && part.count("scales")) {
      w->scheme = "mxfp4";
    } else if (l.scheme == "mlx" && part.count("scales") && part.count("biases") && !l.shape.empty() && l.shape.back()) {
      // Affine (the floating-point modes have no biases): bits and group from the shapes,
      // which detection checked against the config.
      const TensorRecord& q = ref.tensors[part["weight"]];
      const TensorRecord& sc = ref.tensors[part["scales"]];
      if (!sc.shape.empty() && sc.shape.back() && is_forgettable_dtype(sc.dtype)) {
        w->scheme = "mlx";
        w->settings.bits = static_cast<uint32_t>(q.shape.back() * 32 / l.shape.back());
        w->settings.group_size = l.shape.back() / sc.shape.back();
        w->scale_dtype = sc.dtype;
      }
    } else if (l.scheme == "mlx" && part.count("scales") && !l.shape.empty() && l.shape.back()) {
      // A floating-point mode (U8 scales, no biases): bits and group size tell which.
      const TensorRecord& q = ref.tensors[part["weight"]];
      const TensorRecord& sc = ref.tensors[part["scales"]];
      for (auto fp : {quant::MlxFpMode::mxfp4, quant::MlxFpMode::nvfp4, quant::MlxFpMode::mxfp8}) {
        const auto& f = quant::mlx_fp_format(fp);
        if (sc.dtype == DType::U8 && !sc.shape.empty() && q.shape.back() * 32 == l.shape.back() * f.bits &&
            sc.shape.back() * f.group_size == l.shape.back()) {
          w->scheme = "mlx";
          w->fp_mode = fp;
          w->settings.mode = f.name;
          w->settings.bits = f.bits;
          w->settings.group_size = f.group_size;
        }
      }
    }
    if (w->scheme.empty()) {
      return make_error(ErrorCode::invalid_argument, "--like: " + quote(l.name) + " is " + l.scheme + " (" + l.variant +
                                                         "), which forget cannot write yet");
    }
    if (!scheme.empty() && scheme != w->scheme) {
      return make_error(ErrorCode::invalid_argument, "--scheme " + std::string(scheme) + " disagrees with the reference's " +
                                                         w->scheme + " (" + quote(l.name) + ")");
    }
    w->settings.scheme = w->scheme;
    const TensorRecord& wr = ref.tensors[part[w->scheme == "nvfp4" ? "weight_packed" : w->scheme == "mxfp4" ? "blocks" : "weight"]];
    if (reuse) w->codes = std::move(copies[next_codes++]);
    w->settings.linear_orientation = true;  // the input is what remember wrote: [..., out, in]
    w->specs.push_back({wr.name, wr.dtype, wr.shape, wr.nbytes});
    w->bytes.emplace_back();
    std::map<std::string, std::vector<uint8_t>> bytes;  // by role, for the scales below
    for (uint32_t r : companion_records(ref, l)) {
      const TensorRecord& t = ref.tensors[r];
      w->specs.push_back({t.name, t.dtype, t.shape, t.nbytes});
      for (const auto& [role, record] : l.parts) {
        if (record == r) bytes[role] = copies[next];
      }
      w->bytes.push_back(std::move(copies[next++]));
    }
    if (w->scheme == "nf4" || w->scheme == "fp4") {
      const bool nested = part.count("nested_absmax") > 0;
      AMN_ASSIGN(auto q, parse_quant_state(bytes["quant_state"], w->scheme, nested));
      w->type = q.type;
      w->blocksize = q.blocksize;
      w->settings.blocksize = q.blocksize;
      w->settings.double_quant = nested;
      const auto& absmax = bytes["absmax"];
      const uint64_t count = nested ? absmax.size() : absmax.size() / 4;
      w->scales.resize(count);
      if (nested) {
        quant::resolve_bnb_nested_absmax(absmax.data(), count, bytes["nested_quant_map"].data(),
                                         bytes["nested_absmax"].data(), q.nested_blocksize, q.nested_offset,
                                         w->scales.data());
      } else {
        for (uint64_t i = 0; i < count; ++i) w->scales[i] = f32_at(absmax, i);
      }
    } else if (w->scheme == "int8") {
      const auto& scb = bytes["SCB"];
      for (size_t i = 0; i < scb.size() / 4; ++i) w->scales.push_back(f32_at(scb, i));
    } else if (w->scheme == "fp8-channel" || w->scheme == "fp8-tensor") {
      const TensorRecord& sc = ref.tensors[part["scale"]];
      if (!is_forgettable_dtype(sc.dtype)) {
        return make_error(ErrorCode::invalid_argument, "--like: " + quote(l.name) + ": a " +
                                                           std::string(dtype_name(sc.dtype)) + " scale forget cannot write yet");
      }
      w->scale_dtype = sc.dtype;
      w->scales.resize(sc.elements);
      load_f32(bytes["scale"], sc.dtype, 0, sc.elements, w->scales.data());
    } else if (w->scheme == "mxfp4") {
      w->scale_codes = bytes["scales"];
    } else if (w->scheme == "mlx") {
      w->scale_codes = bytes["scales"];
      w->biases = bytes["biases"];
    } else if (w->scheme == "nvfp4") {
      w->scale_codes = bytes["weight_scale"];
      std::memcpy(&w->global_scale, bytes["weight_global_scale"].data(), 4);  // F32 [1]: detection checked it
    } else {
      const TensorRecord& s = ref.tensors[part["scale_inv"]];
      // The block: REF's config names it (weight_block_size), else the grid divides evenly.
      lethe::Fp8Block block = config_block(ref);
      if (block.rows == 0 && s.shape.size() == 2 && l.shape.size() == 2 && s.shape[0] && s.shape[1] &&
          l.shape[0] % s.shape[0] == 0 && l.shape[1] % s.shape[1] == 0) {
        block = {l.shape[0] / s.shape[0], l.shape[1] / s.shape[1]};
      }
      if (s.dtype != DType::F32 || s.shape.size() != 2 || l.shape.size() != 2 || block.rows == 0 ||
          (l.shape[0] + block.rows - 1) / block.rows != s.shape[0] || (l.shape[1] + block.cols - 1) / block.cols != s.shape[1]) {
        return make_error(ErrorCode::invalid_argument, "--like: " + quote(l.name) + ": an FP8 layout forget cannot write yet (" + l.variant + ")");
      }
      w->block = block;
      const auto& inv = bytes["scale_inv"];
      for (size_t i = 0; i < inv.size() / 4; ++i) w->scale_inv.push_back(f32_at(inv, i));
      w->scales.resize(w->scale_inv.size());
      lethe::fp8_block_scales_from_inv(w->scale_inv.data(), w->scale_inv.size(), w->scales.data());
    }
    weights[l.name] = std::move(w);
  }
  if (weights.empty()) return make_error(ErrorCode::invalid_argument, "--like: the reference holds no quantized weight");
  return std::unique_ptr<Forgetter>(std::make_unique<LikeForgetter>(std::move(weights), reuse, ref_quantization_config(ref)));
}

}  // namespace amn
