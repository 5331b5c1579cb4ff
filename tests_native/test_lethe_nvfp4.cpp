// NVFP4 encoder (kernels/lethe/nvfp4_encode.h) against llm-compressor's model_free_ptq run on
// fixtures/lethe/nvfp4 (README.md there), the packed bytes read back by the NVFP4 reader's
// layout, and the round trip on fixtures/quantized/nvfp4/compressed_tensors.
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/cast.h"
#include "kernels/lethe/nvfp4_encode.h"
#include "quant_support.h"
#include "support.h"

using namespace amn;
using namespace amn::lethe;
using namespace amn::test::quant_fixtures;

namespace {

float f32_at(const StFile& f, const std::string& name) {
  float g;
  std::memcpy(&g, f.data(name).data(), 4);
  return g;
}

}  // namespace

TEST_CASE("lethe nvfp4: E2M1 rounding (cast_to_fp4 + pack index)", "[lethe][nvfp4]") {
  CHECK(nvfp4_code(0.25f) == 0);
  CHECK(nvfp4_code(0.2500001f) == 1);
  CHECK(nvfp4_code(0.75f) == 2);
  CHECK(nvfp4_code(1.25f) == 2);
  CHECK(nvfp4_code(1.75f) == 4);
  CHECK(nvfp4_code(2.5f) == 4);
  CHECK(nvfp4_code(3.5f) == 6);
  CHECK(nvfp4_code(5.0f) == 6);
  CHECK(nvfp4_code(5.0000005f) == 7);
  CHECK(nvfp4_code(100.0f) == 7);
  CHECK(nvfp4_code(-100.0f) == 15);
  CHECK(nvfp4_code(-0.1f) == 8);  // a negative rounding to zero keeps its sign
  CHECK(nvfp4_code(-0.0f) == 0);  // torch.sign(-0.0) is 0
  CHECK(nvfp4_global_scale(0.0f, DType::BF16) == 1.0f);  // 2688 / finfo.tiny overflows: 1.0
  CHECK(nvfp4_global_scale(6.0f, DType::F32) == 448.0f);
  CHECK(nvfp4_global_scale(0.01f, DType::F16) == 1.0f);  // 2688 / 0.01 overflows F16
}

TEST_CASE("lethe nvfp4: nvfp4-pack-quantized is model_free_ptq's bytes", "[lethe][nvfp4]") {
  const StFile in = open_fixture("lethe/nvfp4/input.safetensors");
  const StFile ex = open_fixture("lethe/nvfp4/nvfp4.safetensors");
  struct Case {
    std::string base;
    std::vector<std::string> fused;  // the set sharing one global scale
  };
  const std::string attn = "model.layers.0.self_attn.";
  const std::vector<Case> cases = {
      {attn + "q_proj", {attn + "q_proj", attn + "k_proj", attn + "v_proj"}},
      {attn + "k_proj", {attn + "q_proj", attn + "k_proj", attn + "v_proj"}},
      {attn + "v_proj", {attn + "q_proj", attn + "k_proj", attn + "v_proj"}},
      {attn + "o_proj", {attn + "o_proj"}},
      {"model.layers.0.mlp.down_proj", {"model.layers.0.mlp.down_proj"}},
      {"model.layers.1.self_attn.o_proj", {"model.layers.1.self_attn.o_proj"}},
  };
  for (const auto& cs : cases) {
    INFO(cs.base);
    const auto& t = in.tensor(cs.base + ".weight");
    const uint64_t rows = t.shape[0], cols = t.shape[1];
    float amax = 0;
    for (const auto& p : cs.fused) {
      const auto xp = as_f32(in, p + ".weight");
      amax = std::max(amax, absmax(xp.data(), xp.size()));
    }
    const float g = nvfp4_global_scale(amax, t.dtype);
    CHECK(g == f32_at(ex, cs.base + ".weight_global_scale"));
    const std::vector<float> x = as_f32(in, cs.base + ".weight");
    std::vector<uint8_t> scale(rows * cols / 16), packed(rows * cols / 2);
    for (uint64_t r0 = 0; r0 < rows; r0 += 8) {  // bands of 8 rows
      const uint64_t r1 = std::min(rows, r0 + 8);
      nvfp4_block_scales(x.data() + r0 * cols, cols, r0, r1, t.dtype, g, scale.data() + r0 * cols / 16);
      nvfp4_quantize_rows(x.data() + r0 * cols, cols, r0, r1, scale.data() + r0 * cols / 16, g,
                          packed.data() + r0 * cols / 2);
    }
    CHECK(differing(scale, bytes_of(ex, cs.base + ".weight_scale")) == 0);
    CHECK(differing(packed, bytes_of(ex, cs.base + ".weight_packed")) == 0);
  }
}

TEST_CASE("lethe nvfp4: forget(remember(REF)) with REF's scales (compressed_tensors)", "[lethe][nvfp4]") {
  // fixtures/quantized/nvfp4/compressed_tensors: random codes and E4M3 scales; expected =
  // NVFP4PackedCompressor.decompress (BF16). Quantized again with weight_scale and
  // weight_global_scale, every code comes back except code 8 (-0.0): it decompresses to
  // -0.0, and cast_to_fp4 turns -0.0 into +0.0 (torch.sign(-0.0) == 0), code 0.
  const StFile in = open_fixture("quantized/nvfp4/compressed_tensors.safetensors");
  const StFile ex = open_fixture("quantized/nvfp4/compressed_tensors.expected.safetensors");
  for (const std::string base : {"model.layers.0.self_attn.q_proj", "model.layers.0.mlp.down_proj"}) {
    INFO(base);
    const auto& t = in.tensor(base + ".weight_packed");
    const uint64_t rows = t.shape[0], cols = t.shape[1] * 2;
    const std::vector<float> x = as_f32(ex, base + ".weight");
    const auto scale = bytes_of(in, base + ".weight_scale");
    const auto ref = bytes_of(in, base + ".weight_packed");
    std::vector<uint8_t> packed(rows * cols / 2);
    nvfp4_quantize_rows(x.data(), cols, 0, rows, scale.data(), f32_at(in, base + ".weight_global_scale"),
                        packed.data());
    size_t other = 0, minus_zero = 0;
    for (size_t i = 0; i < ref.size(); ++i)
      for (int h = 0; h < 2; ++h) {
        const int a = (packed[i] >> (4 * h)) & 15, b = (ref[i] >> (4 * h)) & 15;
        if (a == b) continue;
        if (b == 8 && a == 0)
          ++minus_zero;
        else
          ++other;
      }
    CHECK(other == 0);
    CHECK(minus_zero > 0);
    // --reuse-scales' signed_zero: an exact -0.0 takes code 8, and every code comes back.
    nvfp4_quantize_rows(x.data(), cols, 0, rows, scale.data(), f32_at(in, base + ".weight_global_scale"),
                        packed.data(), true);
    CHECK(differing(packed, ref) == 0);
  }
}
