#include "schemes/forget_mlx.h"

#include <optional>
#include <vector>

#include "kernels/lethe/mlx_encode.h"
#include "kernels/lethe/mlx_fp_encode.h"
#include "kernels/quant/mlx.h"
#include "kernels/quant/mlx_fp.h"
#include "schemes/forget_util.h"

namespace amn {
namespace {

// mlx-lm's defaults_for_mode("affine") (mlx_lm/utils.py quantize_model).
constexpr uint32_t kDefaultBits = 4;
constexpr uint64_t kDefaultGroup = 64;

// One weight: `<base>.weight` U32 codes, `<base>.scales` (affine: in the weight's dtype,
// and `<base>.biases`; a floating-point mode: U8, no biases).
class MlxOp final : public EncodeOp {
 public:
  MlxOp(const TensorRecord& t, uint32_t bits, uint64_t group, std::optional<quant::MlxFpMode> fp)
      : bits_(bits), group_(group), dtype_(t.dtype), fp_(fp) {
    in_ = t.shape.back();
    rows_ = t.elements / in_;
    std::vector<uint64_t> packed(t.shape.begin(), t.shape.end() - 1), scales = packed;
    packed.push_back(in_ * bits / 32);
    scales.push_back(in_ / group);
    const std::string base = module_of(t.name);
    specs_.push_back({t.name, DType::U32, packed, rows_ * row_bytes(0)});
    specs_.push_back({base + ".scales", fp_ ? DType::U8 : dtype_, scales, rows_ * row_bytes(1)});
    if (!fp_) specs_.push_back({base + ".biases", dtype_, scales, rows_ * row_bytes(2)});
  }
  std::span<const TensorSpec> outputs() const override { return specs_; }
  uint64_t granularity(size_t part) const override { return row_bytes(part); }
  LetheSums distance() const override { return sums_.total(); }

  Status run(std::span<const uint8_t> source, DType from, size_t part, uint64_t begin, uint64_t end,
             uint8_t* out) const override {
    const uint64_t r0 = begin / row_bytes(part), r1 = end / row_bytes(part);
    std::vector<float> values((r1 - r0) * in_);
    load_f32(source, from, r0 * in_, values.size(), values.data());
    std::vector<uint8_t> packed((r1 - r0) * row_bytes(0)), scales((r1 - r0) * row_bytes(1)),
        biases(fp_ ? 0 : scales.size());
    uint8_t* p = part == 0 ? out : packed.data();
    uint8_t* s = part == 1 ? out : scales.data();
    uint8_t* b = part == 2 ? out : biases.data();
    if (fp_) lethe::mlx_fp_quantize_rows(*fp_, values.data(), r1 - r0, in_, dtype_, p, s);
    else lethe::mlx_affine_quantize_rows(values.data(), r1 - r0, in_, bits_, group_, dtype_, p, s, b);
    if (part != 0) return {};
    // mx.dequantize of what was written (amn's reader), in F32.
    std::vector<float> back(values.size());
    uint8_t* back_bytes = reinterpret_cast<uint8_t*>(back.data());
    if (fp_) {
      quant::dequantize_mlx_fp_rows(*fp_, in_, p, s, 0, r1 - r0, DType::F32, back_bytes);
    } else {
      quant::MlxParams q{bits_, group_, r1 - r0, in_, dtype_};
      AMN_TRY(quant::dequantize_mlx_rows(q, {{p, packed.size()}, scales, biases}, 0, r1 - r0, DType::F32,
                                         {back_bytes, back.size() * 4}));
    }
    LetheSums sums;
    for (size_t k = 0; k < values.size(); ++k) sums.add(values[k], back[k]);
    sums_.put(begin, sums);
    return {};
  }

 private:
  uint64_t row_bytes(size_t part) const {
    return part == 0 ? in_ * bits_ / 8 : (in_ / group_) * (fp_ ? 1 : dtype_info(dtype_).block_bytes);
  }
  uint32_t bits_;
  uint64_t group_;
  DType dtype_;
  std::optional<quant::MlxFpMode> fp_;
  uint64_t in_ = 0, rows_ = 0;
  std::vector<TensorSpec> specs_;
  mutable SumsByPiece sums_;
};

class MlxForgetter final : public Forgetter {
 public:
  // fp: a floating-point mode (bits and group are then its own), else affine.
  MlxForgetter(uint32_t bits, uint64_t group, std::optional<quant::MlxFpMode> fp)
      : bits_(bits), group_(group), fp_(fp) {}
  // mx.nn.quantize takes every module with to_quantized (Linear, Embedding, mlx-lm's
  // SwitchLinear), and quantize_model's predicate passes over a weight whose last
  // dimension the group size does not divide. From a file: a 2-D "*.weight" (lm_head and
  // embeddings included), or a 3-D stacked-experts one (switch_mlp).
  std::string default_keep_reason(const TensorRecord& t) const override {
    const bool experts = t.shape.size() == 3 && t.name.find("switch_mlp.") != std::string::npos;
    if (!t.name.ends_with(".weight") || (t.shape.size() != 2 && !experts)) {
      return "not a Linear, Embedding or SwitchLinear weight, which mlx-lm quantizes";
    }
    if (t.shape.back() % group_) {
      return "mlx-lm skips it: its last dimension " + std::to_string(t.shape.back()) + " is not a multiple of " +
             std::to_string(group_);
    }
    return {};
  }
  std::string cannot_hold(const TensorRecord& t) const override {
    if (auto why = not_forgettable(t); !why.empty()) return why;
    if (t.shape.size() < 2 || t.elements == 0) return "mx.quantize quantizes weights of 2 or more dimensions only";
    if (t.shape.back() % group_) {
      return "its last dimension " + std::to_string(t.shape.back()) + " is not a multiple of the group size " +
             std::to_string(group_);
    }
    return {};
  }
  std::shared_ptr<const EncodeOp> encode(const TensorRecord& t) const override {
    return std::make_shared<MlxOp>(t, bits_, group_, fp_);
  }
  // mlx-lm's quantize_model: "quantization" = {group_size, bits, mode}, mirrored as
  // "quantization_config" (quantization_config_mirrors).
  std::string quantization_config_json() const override {
    return "{\"group_size\":" + std::to_string(group_) + ",\"bits\":" + std::to_string(bits_) + ",\"mode\":\"" +
           mode_name() + "\"}";
  }
  std::vector<std::string> quantization_config_mirrors() const override { return {"quantization"}; }
  std::string describe() const override {
    return "mlx (" + mode_name() + ", " + std::to_string(bits_) + " bits, group size " + std::to_string(group_) + ")";
  }

 private:
  std::string mode_name() const { return fp_ ? quant::mlx_fp_format(*fp_).name : "affine"; }
  uint32_t bits_;
  uint64_t group_;
  std::optional<quant::MlxFpMode> fp_;
};

}  // namespace

Result<std::unique_ptr<Forgetter>> make_mlx_forgetter(const ForgetSettings& s) {
  AMN_TRY(no_bnb_settings(s));
  const std::string mode = s.mode.empty() ? "affine" : s.mode;
  for (auto fp : {quant::MlxFpMode::mxfp4, quant::MlxFpMode::nvfp4, quant::MlxFpMode::mxfp8}) {
    const quant::MlxFpFormat& f = quant::mlx_fp_format(fp);
    if (mode != f.name) continue;
    // mlx-lm's defaults_for_mode, and mx.quantize's checks (mlx/ops.cpp fp_quantize): the
    // mode's own bits and group size only.
    if (s.bits && s.bits != f.bits) {
      return make_error(ErrorCode::invalid_argument, "bits " + std::to_string(s.bits) + ": mlx mode " + mode + " takes " +
                                                         std::to_string(f.bits) + " only");
    }
    if (s.group_size && s.group_size != f.group_size) {
      return make_error(ErrorCode::invalid_argument, "group size " + std::to_string(s.group_size) + ": mlx mode " + mode +
                                                         " takes " + std::to_string(f.group_size) + " only");
    }
    return std::unique_ptr<Forgetter>(std::make_unique<MlxForgetter>(f.bits, f.group_size, fp));
  }
  if (mode != "affine") {
    std::string list;
    for (size_t i = 0; i < kMlxModes.size(); ++i) {
      list += std::string(i == 0 ? "" : i + 1 == kMlxModes.size() ? " or " : ", ") + std::string(kMlxModes[i]);
    }
    return make_error(ErrorCode::invalid_argument, "mode '" + mode + "': mlx takes " + list);
  }
  const uint32_t bits = s.bits ? s.bits : kDefaultBits;
  const uint64_t group = s.group_size ? s.group_size : kDefaultGroup;
  // mx.quantize's own checks (mlx/ops.cpp affine_quantize).
  if (bits < 2 || bits > 8 || bits == 7) {
    return make_error(ErrorCode::invalid_argument, "bits " + std::to_string(bits) + ": mlx takes 2, 3, 4, 5, 6 or 8");
  }
  if (group != 32 && group != 64 && group != 128) {
    return make_error(ErrorCode::invalid_argument, "group size " + std::to_string(group) + ": mlx takes 32, 64 or 128");
  }
  return std::unique_ptr<Forgetter>(std::make_unique<MlxForgetter>(bits, group, std::nullopt));
}

}  // namespace amn
