// MLX floating-point-mode encoder (kernels/lethe/mlx_fp_encode.h) against mx.quantize:
// MLX's own bytes (fixtures/quantized/mlx/modes_bf16, from the inputs
// fixtures/lethe/mlx_fp draws again) and the edge cases of
// fixtures/lethe/mlx_fp/edge.safetensors (README.md there), and the round trip through
// the reader (kernels/quant/mlx_fp.h) with the same scales.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/lethe/mlx_fp_encode.h"
#include "kernels/quant/mlx_fp.h"
#include "quant_support.h"
#include "support.h"

using namespace amn;
using namespace amn::lethe;
using namespace amn::test::quant_fixtures;
using quant::MlxFpMode;

namespace {

struct Encoded {
  std::vector<uint8_t> codes, scales;
};

Encoded encode(MlxFpMode mode, const std::vector<float>& x, uint64_t rows, uint64_t cols, DType dt) {
  const quant::MlxFpFormat& f = quant::mlx_fp_format(mode);
  Encoded e{std::vector<uint8_t>(rows * cols * f.bits / 8), std::vector<uint8_t>(rows * cols / f.group_size)};
  mlx_fp_quantize_rows(mode, x.data(), rows, cols, dt, e.codes.data(), e.scales.data());
  return e;
}

MlxFpMode mode_named(const std::string& name) {
  return name == "mxfp4" ? MlxFpMode::mxfp4 : name == "nvfp4" ? MlxFpMode::nvfp4 : MlxFpMode::mxfp8;
}

}  // namespace

TEST_CASE("lethe mlx fp: MLX's E4M3 both ways (ToFP8 saturates, FromFP8 has no NaN)", "[lethe][mlx]") {
  CHECK(mlx_f32_to_e4m3(448.0f) == 0x7E);
  CHECK(mlx_f32_to_e4m3(470.0f) == 0x7E);  // from 448 on: saturated (c10's would round to 0x7F)
  CHECK(mlx_f32_to_e4m3(447.0f) == 0x7E);  // rounds to 448
  CHECK(mlx_f32_to_e4m3(431.0f) == 0x7D);  // 416 + 15: nearer 416
  CHECK(mlx_f32_to_e4m3(432.0f) == 0x7E);  // the tie 416 | 448 goes to the even 0x7E
  CHECK(mlx_f32_to_e4m3(-INFINITY) == 0xFE);
  CHECK(mlx_f32_to_e4m3(NAN) == 0x7E);
  CHECK(mlx_f32_to_e4m3(-0.0f) == 0x80);
  CHECK(mlx_f32_to_e4m3(std::ldexp(1.0f, -10)) == 0x00);  // half the smallest subnormal: to even
  CHECK(mlx_f32_to_e4m3(std::ldexp(3.0f, -10)) == 0x02);  // 1.5 steps: to even
  CHECK(quant::mlx_e4m3_to_f32(0x7F) == 480.0f);
  CHECK(quant::mlx_e4m3_to_f32(0xFF) == -480.0f);
  CHECK(quant::mlx_e4m3_to_f32(0x01) == std::ldexp(1.0f, -9));
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;  // 480 saturates back to 0x7E
    INFO(c);
    CHECK(mlx_f32_to_e4m3(quant::mlx_e4m3_to_f32(uint8_t(c))) == c);
  }
}

TEST_CASE("lethe mlx fp: mx.quantize's own bytes for mxfp4, nvfp4 and mxfp8 (BF16, experts, odd rows)",
          "[lethe][mlx]") {
  const StFile in = open_fixture("lethe/mlx_fp/modes_bf16.input.safetensors");
  const StFile ex = open_fixture("quantized/mlx/modes_bf16/model.safetensors");
  int checked = 0;
  for (const auto& rec : in.model.tensors) {
    const std::string& name = rec.name;
    const std::string base = name.substr(0, name.size() - 7);
    if (name == "model.norm.weight" || ex.model.find(base + ".biases")) continue;  // affine: test_lethe_mlx.cpp
    INFO(name);
    const auto& t = in.tensor(name);
    const uint64_t cols = t.shape.back(), rows = t.elements / cols;
    const uint64_t groups = ex.tensor(base + ".scales").shape.back();
    const uint32_t bits = uint32_t(ex.tensor(name).shape.back() * 32 / cols);
    const MlxFpMode mode = bits == 8 ? MlxFpMode::mxfp8 : cols / groups == 16 ? MlxFpMode::nvfp4 : MlxFpMode::mxfp4;
    const Encoded e = encode(mode, as_f32(in, name), rows, cols, t.dtype);
    CHECK(differing(e.scales, bytes_of(ex, base + ".scales")) == 0);
    const std::vector<uint8_t> want = bytes_of(ex, name);
    // Layer 1's FP4 weights were edited after mx.quantize in odd rows (code 0 -> 8,
    // fixtures/quantized/mlx/README.md): MLX's own codes are the even rows.
    const bool edited = name.starts_with("model.layers.1.") && mode != MlxFpMode::mxfp8;
    const uint64_t row = cols * bits / 8;
    for (uint64_t r = 0; r < rows; r += edited ? 2 : 1) {
      INFO("row " << r);
      CHECK(std::equal(e.codes.begin() + r * row, e.codes.begin() + (r + 1) * row, want.begin() + r * row));
    }
    ++checked;
  }
  CHECK(checked == 8);
}

TEST_CASE("lethe mlx fp: edge cases (zeros, ties, signed zeros, subnormals, large, NaN, Inf) in F32, BF16, F16",
          "[lethe][mlx]") {
  const StFile in = open_fixture("lethe/mlx_fp/edge.input.safetensors");
  const StFile ex = open_fixture("lethe/mlx_fp/edge.safetensors");
  for (const std::string dt : {"f32", "bf16", "f16"}) {
    const auto& t = in.tensor(dt);
    const uint64_t rows = t.shape[0], cols = t.shape[1];
    const std::vector<float> x = as_f32(in, dt);
    for (const std::string name : {"mxfp4", "nvfp4", "mxfp8"}) {
      const std::string n = dt + "." + name;
      INFO(n);
      const MlxFpMode mode = mode_named(name);
      const Encoded e = encode(mode, x, rows, cols, t.dtype);
      CHECK(differing(e.codes, bytes_of(ex, n + ".weight")) == 0);
      CHECK(differing(e.scales, bytes_of(ex, n + ".scales")) == 0);
      // forget(remember(...)) with the same scales: the reader's F32 values encoded again.
      std::vector<float> back(rows * cols);
      quant::dequantize_mlx_fp_rows(mode, cols, e.codes.data(), e.scales.data(), 0, rows, DType::F32,
                                    reinterpret_cast<uint8_t*>(back.data()));
      Encoded again = e;
      mlx_fp_quantize_rows(mode, back.data(), rows, cols, t.dtype, again.codes.data(), again.scales.data(), true);
      // Groups that dequantize to finite values: an exponent below -127 wraps (fixtures
      // README), e.g. to 2^122, whose products overflow alike, or to 255 (+inf).
      const quant::MlxFpFormat& f = quant::mlx_fp_format(mode);
      const uint64_t group_bytes = f.group_size * f.bits / 8;
      int compared = 0;
      for (uint64_t g = 0; g < e.scales.size(); ++g) {
        const float* v = back.data() + g * f.group_size;
        if (!std::all_of(v, v + f.group_size, [](float y) { return std::isfinite(y); })) continue;
        ++compared;
        INFO("group " << g);
        CHECK(std::equal(again.codes.begin() + g * group_bytes, again.codes.begin() + (g + 1) * group_bytes,
                         e.codes.begin() + g * group_bytes));
      }
      CHECK(compared >= int(e.scales.size()) - 4);
    }
  }
}
