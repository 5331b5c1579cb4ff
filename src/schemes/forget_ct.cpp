#include "schemes/forget_ct.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "kernels/cast.h"
#include "kernels/lethe/fp8_ct_encode.h"
#include "kernels/lethe/torch_ops.h"
#include "kernels/quant/fp8.h"
#include "schemes/forget_util.h"

namespace amn {
namespace {

// A value of `t` (BF16, F16 or F32) held in an F32, written as `t`.
void put_as(DType t, float v, uint8_t* out) {
  if (t == DType::F32) {
    std::memcpy(out, &v, 4);
    return;
  }
  const uint16_t h = t == DType::BF16 ? scalar::f32_to_bf16(v) : scalar::f32_to_f16(v);
  std::memcpy(out, &h, 2);
}

class CtFp8Op final : public EncodeOp {
 public:
  CtFp8Op(const TensorRecord& t, bool per_row) : per_row_(per_row), rows_(t.shape[0]), cols_(t.shape[1]), dtype_(t.dtype) {
    const uint64_t size = dtype_info(dtype_).block_bytes;
    specs_.push_back({t.name, DType::F8_E4M3, {rows_, cols_}, rows_ * cols_});
    if (per_row) specs_.push_back({t.name + "_scale", dtype_, {rows_, 1}, rows_ * size});
    else specs_.push_back({t.name + "_scale", dtype_, {1}, size});
  }
  std::span<const TensorSpec> outputs() const override { return specs_; }
  uint64_t granularity(size_t part) const override {
    return part == 0 ? cols_ : (per_row_ ? dtype_info(dtype_).block_bytes : specs_[1].nbytes);
  }
  LetheSums distance() const override { return sums_.total(); }

  Status run(std::span<const uint8_t> source, DType from, size_t part, uint64_t begin, uint64_t end,
             uint8_t* out) const override {
    const uint64_t size = dtype_info(dtype_).block_bytes;
    const uint64_t r0 = part == 0 ? begin / cols_ : begin / size;
    const uint64_t r1 = part == 0 ? end / cols_ : (per_row_ ? end / size : rows_);
    std::vector<float> values((r1 - r0) * cols_), scale(per_row_ ? r1 - r0 : 1);
    load_f32(source, from, r0 * cols_, values.size(), values.data());
    if (per_row_) lethe::ct_fp8_channel_scales(values.data(), cols_, r0, r1, dtype_, scale.data());
    else scale[0] = tensor_scale(source, from);
    if (part == 1) {
      for (size_t i = 0; i < (per_row_ ? scale.size() : 1); ++i) put_as(dtype_, scale[i], out + i * size);
      return {};
    }
    lethe::ct_fp8_quantize_rows(values.data(), cols_, r0, r1, dtype_, scale.data(), per_row_, false, out);
    // compressed-tensors' dequantize: the code times the scale, in the scale's dtype.
    LetheSums sums;
    for (uint64_t r = 0; r < r1 - r0; ++r) {
      const float s = per_row_ ? scale[r] : scale[0];
      for (uint64_t c = 0; c < cols_; ++c) {
        const float y = lethe::round_to(quant::fp8_to_f32(DType::F8_E4M3, out[r * cols_ + c]) * s, dtype_);
        sums.add(values[r * cols_ + c], y);
      }
    }
    sums_.put(begin, sums);
    return {};
  }

 private:
  // fp8-tensor: one scale from the amax of the whole weight (computed once).
  float tensor_scale(std::span<const uint8_t> source, DType from) const {
    std::call_once(once_, [&] {
      const float amax = source_absmax(source, from, rows_ * cols_);
      tensor_scale_ = lethe::ct_fp8_scale(amax, dtype_);
    });
    return tensor_scale_;
  }

  bool per_row_;
  uint64_t rows_, cols_;
  DType dtype_;
  std::vector<TensorSpec> specs_;
  mutable std::once_flag once_;
  mutable float tensor_scale_ = 0;
  mutable SumsByPiece sums_;
};

class CtFp8Forgetter final : public Forgetter {
 public:
  explicit CtFp8Forgetter(bool per_row) : per_row_(per_row) {}
  // targets ["Linear"], ignore ["lm_head"]: transformers' Linear rule.
  std::string default_keep_reason(const TensorRecord& t) const override { return linear_keep_reason(t); }
  std::string cannot_hold(const TensorRecord& t) const override {
    if (auto why = not_forgettable(t); !why.empty()) return why;
    if (t.shape.size() != 2 || t.elements == 0) return "compressed-tensors quantizes 2-D Linear weights only";
    return {};
  }
  std::shared_ptr<const EncodeOp> encode(const TensorRecord& t) const override {
    return std::make_shared<CtFp8Op>(t, per_row_);
  }
  // model_free_ptq's quantization_config (fixtures/lethe/fp8_ct/README.md), weight-only
  // for fp8-tensor (its preset's static input scales need calibration data). The group
  // is named as validate_config names it: the preset's name for a preset (FP8_DYNAMIC),
  // "config_group_0" for a scheme given as an object (weight-only per-tensor FP8 has no
  // preset). No "version": it is the installed compressed-tensors' own.
  std::string quantization_config_json() const override {
    const std::string weights = std::string("{\"actorder\":null,\"block_structure\":null,\"dynamic\":false,\"group_size\":null,"
                                            "\"num_bits\":8,\"observer\":\"memoryless_minmax\",\"observer_kwargs\":{},"
                                            "\"scale_dtype\":null,\"strategy\":\"") +
                                (per_row_ ? "channel" : "tensor") +
                                "\",\"symmetric\":true,\"type\":\"float\",\"zp_dtype\":null}";
    const std::string inputs = per_row_
                                   ? "{\"actorder\":null,\"block_structure\":null,\"dynamic\":true,\"group_size\":null,"
                                     "\"num_bits\":8,\"observer\":null,\"observer_kwargs\":{},\"scale_dtype\":null,"
                                     "\"strategy\":\"token\",\"symmetric\":true,\"type\":\"float\",\"zp_dtype\":null}"
                                   : "null";
    const std::string group = per_row_ ? "FP8_DYNAMIC" : "config_group_0";
    return "{\"config_groups\":{\"" + group + "\":{\"format\":\"float-quantized\",\"input_activations\":" + inputs +
           ",\"output_activations\":null,\"targets\":[\"Linear\"],\"weights\":" + weights +
           "}},\"format\":\"float-quantized\",\"global_compression_ratio\":null,\"ignore\":[\"lm_head\"],"
           "\"kv_cache_scheme\":null,\"quant_method\":\"compressed-tensors\",\"quantization_status\":\"compressed\","
           "\"transform_config\":{}}";
  }
  std::string describe() const override {
    return per_row_ ? "compressed-tensors fp8 (E4M3), one scale per channel" : "compressed-tensors fp8 (E4M3), one scale per tensor";
  }

 private:
  bool per_row_;
};

}  // namespace

Result<std::unique_ptr<Forgetter>> make_ct_forgetter(const ForgetSettings& s) {
  AMN_TRY(no_bnb_settings(s));
  return std::unique_ptr<Forgetter>(std::make_unique<CtFp8Forgetter>(s.scheme == "fp8-channel"));
}

}  // namespace amn
