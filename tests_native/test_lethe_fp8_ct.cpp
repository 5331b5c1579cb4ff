// compressed-tensors FP8 encoders (kernels/lethe/fp8_ct_encode.h) against llm-compressor's
// model_free_ptq run on fixtures/lethe/fp8_ct (README.md there), and the round trip on
// fixtures/quantized/fp8/channel_e4m3_ct.
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/cast.h"
#include "kernels/lethe/fp8_ct_encode.h"
#include "quant_support.h"
#include "support.h"

using namespace amn;
using namespace amn::lethe;
using namespace amn::test::quant_fixtures;

namespace {

// The scales as the producer stores them: in the weight's dtype.
std::vector<uint8_t> scale_bytes(const std::vector<float>& s, DType dt) {
  std::vector<uint8_t> out(s.size() * dtype_info(dt).block_bytes);
  cast_floats(DType::F32, dt, reinterpret_cast<const uint8_t*>(s.data()), out.data(), s.size());
  return out;
}

const char* const kBases[] = {"model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.o_proj",
                              "model.layers.0.mlp.down_proj"};

}  // namespace

TEST_CASE("lethe fp8-ct: scale arithmetic in the weight's dtype", "[lethe][fp8_ct]") {
  CHECK(ct_fp8_scale(448.0f, DType::BF16) == 1.0f);
  CHECK(ct_fp8_scale(0.0f, DType::BF16) == 0.0078125f);  // finfo(bfloat16).eps
  CHECK(ct_fp8_scale(0.0f, DType::F16) == 0.0009765625f);
  CHECK(ct_fp8_scale(0.0f, DType::F32) == 1.1920928955078125e-7f);
  CHECK(ct_fp8_scale(1e-39f, DType::BF16) == 0.0078125f);  // underflows to 0 in BF16
  // 0.1 / 448 rounded to BF16 (not the F32 quotient)
  CHECK(ct_fp8_scale(0.1f, DType::BF16) != 0.1f / 448.0f);
  CHECK(ct_fp8_scale(0.1f, DType::F32) == 0.1f / 448.0f);
}

TEST_CASE("lethe fp8-ct: fp8-channel and fp8-tensor are model_free_ptq's bytes", "[lethe][fp8_ct]") {
  const StFile in = open_fixture("lethe/fp8_ct/input.safetensors");
  for (const std::string variant : {"channel", "tensor", "channel_zp"}) {
    const StFile ex = open_fixture("lethe/fp8_ct/" + variant + ".safetensors");
    const bool per_row = variant != "tensor", zp = variant == "channel_zp";
    for (const std::string base : kBases) {
      INFO(variant << " " << base);
      const auto& t = in.tensor(base + ".weight");
      const uint64_t rows = t.shape[0], cols = t.shape[1];
      const std::vector<float> x = as_f32(in, base + ".weight");
      std::vector<float> scale(per_row ? rows : 1);
      std::vector<uint8_t> q(rows * cols);
      if (per_row) {
        // bands of 16 rows, as the pipeline streams them
        for (uint64_t r0 = 0; r0 < rows; r0 += 16) {
          const uint64_t r1 = std::min(rows, r0 + 16);
          ct_fp8_channel_scales(x.data() + r0 * cols, cols, r0, r1, t.dtype, scale.data() + r0);
          ct_fp8_quantize_rows(x.data() + r0 * cols, cols, r0, r1, t.dtype, scale.data() + r0, true, zp,
                               q.data() + r0 * cols);
        }
      } else {
        scale[0] = ct_fp8_scale(absmax(x.data(), x.size()), t.dtype);
        for (uint64_t r0 = 0; r0 < rows; r0 += 16) {
          const uint64_t r1 = std::min(rows, r0 + 16);
          ct_fp8_quantize_rows(x.data() + r0 * cols, cols, r0, r1, t.dtype, scale.data(), false, zp,
                               q.data() + r0 * cols);
        }
      }
      CHECK(differing(q, bytes_of(ex, base + ".weight")) == 0);
      CHECK(ex.tensor(base + ".weight_scale").dtype == t.dtype);
      CHECK(differing(scale_bytes(scale, t.dtype), bytes_of(ex, base + ".weight_scale")) == 0);
    }
  }
}

TEST_CASE("lethe fp8-ct: the zero point only changes quotients of -0.0", "[lethe][fp8_ct]") {
  const StFile a = open_fixture("lethe/fp8_ct/channel.safetensors");
  const StFile b = open_fixture("lethe/fp8_ct/channel_zp.safetensors");
  size_t changed = 0;
  for (const std::string base : kBases) {
    const auto qa = bytes_of(a, base + ".weight"), qb = bytes_of(b, base + ".weight");
    for (size_t i = 0; i < qa.size(); ++i)
      if (qa[i] != qb[i]) {
        CHECK(qa[i] == 0x80);
        CHECK(qb[i] == 0x00);
        ++changed;
      }
  }
  CHECK(changed > 0);
}

TEST_CASE("lethe fp8-ct: forget(remember(REF)) with REF's weight_scale is REF (channel_e4m3_ct)", "[lethe][fp8_ct]") {
  // fixtures/quantized/fp8/channel_e4m3_ct: k_proj 256x512 BF16 scales, o_proj 37x45 (every
  // finite code) F16 scales; expected = compressed-tensors _dequantize in the scale's dtype.
  const StFile in = open_fixture("quantized/fp8/channel_e4m3_ct.safetensors");
  const StFile ex = open_fixture("quantized/fp8/channel_e4m3_ct.expected.safetensors");
  for (const std::string base : {"model.layers.0.self_attn.k_proj", "model.layers.0.self_attn.o_proj"}) {
    INFO(base);
    const auto& t = in.tensor(base + ".weight");
    const uint64_t rows = t.shape[0], cols = t.shape[1];
    const DType dt = in.tensor(base + ".weight_scale").dtype;
    const std::vector<float> x = as_f32(ex, base + ".weight"), scale = as_f32(in, base + ".weight_scale");
    const auto ref = bytes_of(in, base + ".weight");
    std::vector<uint8_t> q(rows * cols);
    // in the dequantized dtype (the scale's), as the producer would compute on such a weight
    ct_fp8_quantize_rows(x.data(), cols, 0, rows, dt, scale.data(), true, false, q.data());
    CHECK(differing(q, ref) == 0);
    // remembered to F32 (the same values widened) and quantized in F32
    ct_fp8_quantize_rows(x.data(), cols, 0, rows, DType::F32, scale.data(), true, false, q.data());
    CHECK(differing(q, ref) == 0);
  }
}
