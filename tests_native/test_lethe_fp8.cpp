// FP8 encoders (kernels/lethe/fp8_encode.h) against transformers' Fp8Quantize.convert run on
// fixtures/lethe/fp8 (README.md there), and c10's float -> e4m3fn on every F32 class.
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/bytes.h"
#include "kernels/cast.h"
#include "kernels/lethe/fp8_encode.h"
#include "quant_support.h"
#include "support.h"

using namespace amn;
using namespace amn::lethe;
using namespace amn::test::quant_fixtures;

TEST_CASE("lethe fp8: c10's float -> float8_e4m3fn", "[lethe][fp8]") {
  CHECK(f32_to_e4m3fn(0.0f) == 0x00);
  CHECK(f32_to_e4m3fn(-0.0f) == 0x80);
  CHECK(f32_to_e4m3fn(448.0f) == 0x7E);
  CHECK(f32_to_e4m3fn(464.0f) == 0x7E);  // tie between 448 and 480: even
  CHECK(f32_to_e4m3fn(480.0f) == 0x7F);  // beyond the range: NaN (no saturation)
  CHECK(f32_to_e4m3fn(-INFINITY) == 0xFF);
  CHECK(f32_to_e4m3fn(NAN) == 0x7F);
  CHECK(f32_to_e4m3fn(std::ldexp(1.0f, -9)) == 0x01);   // the smallest subnormal
  CHECK(f32_to_e4m3fn(std::ldexp(1.0f, -10)) == 0x00);  // half of it: tie to even
  CHECK(f32_to_e4m3fn(std::ldexp(3.0f, -11)) == 0x01);
}

TEST_CASE("lethe fp8: fp8-block (128x128, weight_scale_inv) is transformers' bytes", "[lethe][fp8]") {
  const StFile in = open_fixture("lethe/fp8/block.input.safetensors");
  const StFile ex = open_fixture("lethe/fp8/block.safetensors");
  for (const std::string base :
       {"model.layers.0.self_attn.q_proj", "model.layers.0.mlp.down_proj", "model.layers.0.self_attn.o_proj"}) {
    INFO(base);
    const auto& t = in.tensor(base + ".weight");
    const uint64_t rows = t.shape[0], cols = t.shape[1];
    std::vector<float> x(rows * cols);
    cast_floats(t.dtype, DType::F32, in.data(base + ".weight").data(), reinterpret_cast<uint8_t*>(x.data()), x.size());
    const Fp8Block block{128, 128};
    const uint64_t tiles = (rows / 128) * ((cols + 127) / 128);
    std::vector<float> scale(tiles), inv(tiles);
    std::vector<uint8_t> q(rows * cols);
    // row bands of one tile row each, as the pipeline streams them
    const uint64_t per_band = (cols + 127) / 128;
    for (uint64_t r0 = 0; r0 < rows; r0 += 128) {
      const uint64_t r1 = std::min(rows, r0 + 128);
      fp8_block_scales(x.data() + r0 * cols, cols, r0, r1, block, scale.data() + r0 / 128 * per_band,
                       inv.data() + r0 / 128 * per_band);
      fp8_block_quantize_rows(x.data() + r0 * cols, cols, r0, r1, block, scale.data() + r0 / 128 * per_band,
                              q.data() + r0 * cols);
    }
    const auto eq = ex.data(base + ".weight");
    CHECK(differing(q, std::vector<uint8_t>(eq.begin(), eq.end())) == 0);
    std::vector<uint8_t> invb(inv.size() * 4);
    std::memcpy(invb.data(), inv.data(), invb.size());
    const auto es = ex.data(base + ".weight_scale_inv");
    CHECK(differing(invb, std::vector<uint8_t>(es.begin(), es.end())) == 0);
  }
}

TEST_CASE("lethe fp8: forget(remember(REF)) with REF's weight_scale_inv is REF (block_e4m3 q_proj)", "[lethe][fp8]") {
  // fixtures/quantized/fp8/block_e4m3: q_proj E4M3 256x512 + weight_scale_inv [2, 4]; its
  // expected F32 is transformers' Fp8Dequantize. Quantized again with scale = 1 / scale_inv.
  const StFile in = open_fixture("quantized/fp8/block_e4m3.safetensors");
  const StFile ex = open_fixture("quantized/fp8/block_e4m3.expected.safetensors");
  const std::string base = "model.layers.0.self_attn.q_proj";
  const auto xb = ex.data(base + ".weight");
  std::vector<float> x(xb.size() / 4);
  std::memcpy(x.data(), xb.data(), xb.size());
  const auto sb = in.data(base + ".weight_scale_inv");
  std::vector<float> inv(sb.size() / 4), scale(inv.size());
  std::memcpy(inv.data(), sb.data(), sb.size());
  fp8_block_scales_from_inv(inv.data(), inv.size(), scale.data());
  std::vector<uint8_t> q(x.size());
  fp8_block_quantize_rows(x.data(), 512, 0, 256, Fp8Block{128, 128}, scale.data(), q.data());
  const auto eq = in.data(base + ".weight");
  CHECK(differing(q, std::vector<uint8_t>(eq.begin(), eq.end())) == 0);
}
