#include "schemes/forget_mxfp4.h"

#include <algorithm>
#include <vector>

#include "kernels/lethe/mxfp4_encode.h"
#include "kernels/quant/fp4.h"
#include "schemes/forget_util.h"

namespace amn {
namespace {

// A gpt-oss expert parameter as transformers holds it: [E, in, out], no ".weight".
bool is_expert_param(const TensorRecord& t) {
  const std::string_view n = t.name;
  return t.shape.size() == 3 && (n.ends_with(".experts.gate_up_proj") || n.ends_with(".experts.down_proj"));
}

class Mxfp4Op final : public EncodeOp {
 public:
  // transposed: the source is [..., in, out] (transformers' expert parameter); else
  // [..., out, in]. Outputs are [..., out, in / 32, 16] and [..., out, in / 32] either way.
  Mxfp4Op(const TensorRecord& t, bool transposed) : transposed_(transposed) {
    const size_t nd = t.shape.size();
    out_ = transposed ? t.shape[nd - 1] : t.shape[nd - 2];
    in_ = transposed ? t.shape[nd - 2] : t.shape[nd - 1];
    lead_ = 1;
    std::vector<uint64_t> head(t.shape.begin(), t.shape.end() - 2);
    for (uint64_t d : head) lead_ *= d;
    std::vector<uint64_t> blocks = head, scales = head;
    blocks.insert(blocks.end(), {out_, in_ / 32, 16});
    scales.insert(scales.end(), {out_, in_ / 32});
    specs_.push_back({t.name + "_blocks", DType::U8, blocks, lead_ * out_ * in_ / 2});
    specs_.push_back({t.name + "_scales", DType::U8, scales, lead_ * out_ * in_ / 32});
  }
  std::span<const TensorSpec> outputs() const override { return specs_; }
  uint64_t granularity(size_t part) const override { return part == 0 ? in_ / 2 : in_ / 32; }
  LetheSums distance() const override { return sums_.total(); }

  Status run(std::span<const uint8_t> source, DType from, size_t part, uint64_t begin, uint64_t end,
             uint8_t* out) const override {
    const uint64_t row_bytes = part == 0 ? in_ / 2 : in_ / 32;
    const uint64_t r0 = begin / row_bytes, r1 = end / row_bytes;  // rows over every leading index
    std::vector<float> values((r1 - r0) * in_);
    load_rows(source, from, r0, r1, values.data());
    std::vector<uint8_t> blocks((r1 - r0) * in_ / 2), scales((r1 - r0) * in_ / 32);
    lethe::mxfp4_quantize_rows(values.data(), r1 - r0, in_, part == 0 ? out : blocks.data(), part == 1 ? out : scales.data());
    if (part == 1) return {};
    // transformers' convert_moe_packed_tensors (amn's reader), in F32.
    std::vector<float> back(values.size());
    quant::dequantize_mxfp4_rows({r1 - r0, in_ / 32}, out, scales.data(), 0, r1 - r0, DType::F32,
                                 reinterpret_cast<uint8_t*>(back.data()));
    LetheSums sums;
    for (size_t k = 0; k < values.size(); ++k) sums.add(values[k], back[k]);
    sums_.put(begin, sums);
    return {};
  }

 private:
  // Rows [r0, r1) in the [..., out, in] orientation, as F32.
  void load_rows(std::span<const uint8_t> source, DType from, uint64_t r0, uint64_t r1, float* values) const {
    if (!transposed_) {
      load_f32(source, from, r0 * in_, (r1 - r0) * in_, values);
      return;
    }
    std::vector<float> column;
    for (uint64_t r = r0; r < r1;) {  // one leading index (expert) at a time
      const uint64_t e = r / out_, o0 = r % out_, o1 = std::min(out_, o0 + (r1 - r));
      column.resize(o1 - o0);
      for (uint64_t c = 0; c < in_; ++c) {  // source [e, c, o0..o1) -> values [r - r0 + k, c]
        load_f32(source, from, (e * in_ + c) * out_ + o0, o1 - o0, column.data());
        for (uint64_t k = 0; k < o1 - o0; ++k) values[(r - r0 + k) * in_ + c] = column[k];
      }
      r += o1 - o0;
    }
  }

  bool transposed_;
  uint64_t out_ = 0, in_ = 0, lead_ = 1;
  std::vector<TensorSpec> specs_;
  mutable SumsByPiece sums_;
};

class Mxfp4Forgetter final : public Forgetter {
 public:
  explicit Mxfp4Forgetter(bool linear) : linear_(linear) {}
  // transformers' Mxfp4HfQuantizer replaces the gpt-oss experts only (Mxfp4GptOssExperts:
  // gate_up_proj, down_proj); everything else, dense Linear layers included, stays.
  std::string default_keep_reason(const TensorRecord& t) const override {
    if (is_expert_param(t)) return {};
    return "transformers' Mxfp4 quantizes only the gpt-oss MoE experts (gate_up_proj, down_proj)";
  }
  std::string cannot_hold(const TensorRecord& t) const override {
    if (auto why = not_forgettable(t); !why.empty()) return why;
    if (t.shape.size() < 2 || t.elements == 0) return "mxfp4 quantizes weights of 2 or more dimensions only";
    const uint64_t in = transposed(t) ? t.shape[t.shape.size() - 2] : t.shape.back();
    if (in % 32) return "its " + std::to_string(in) + " inputs are not a multiple of 32 (one E8M0 scale per 32)";
    return {};
  }
  std::shared_ptr<const EncodeOp> encode(const TensorRecord& t) const override {
    return std::make_shared<Mxfp4Op>(t, transposed(t));
  }
  // gpt-oss's published quantization_config (openai/gpt-oss-20b config.json; the
  // fixtures/quantized/mxfp4 config).
  std::string quantization_config_json() const override {
    return "{\"modules_to_not_convert\":[\"model.layers.*.self_attn\",\"model.layers.*.mlp.router\","
           "\"model.embed_tokens\",\"lm_head\"],\"quant_method\":\"mxfp4\"}";
  }
  std::string describe() const override { return "mxfp4 (OCP MX: E2M1, one E8M0 scale per 32; gpt-oss _blocks/_scales)"; }

 private:
  bool transposed(const TensorRecord& t) const { return !linear_ && is_expert_param(t); }
  bool linear_;
};

}  // namespace

Result<std::unique_ptr<Forgetter>> make_mxfp4_forgetter(const ForgetSettings& s) {
  AMN_TRY(no_bnb_settings(s));
  return std::unique_ptr<Forgetter>(std::make_unique<Mxfp4Forgetter>(s.linear_orientation));
}

}  // namespace amn
