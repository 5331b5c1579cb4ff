// MXFP4 encoder (kernels/lethe/mxfp4_encode.h) against transformers' quantize_to_mxfp4
// (triton_kernels' downcast_to_mxfp_torch) run on fixtures/lethe/mxfp4 (README.md there),
// and the round trip through amn's MXFP4 reader with the same scales.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/lethe/mxfp4_encode.h"
#include "kernels/quant/fp4.h"
#include "quant_support.h"
#include "support.h"

using namespace amn;
using namespace amn::lethe;
using namespace amn::test::quant_fixtures;

TEST_CASE("lethe mxfp4: E2M1 rounding and E8M0 scales (downcast_to_mxfp_torch)", "[lethe][mxfp4]") {
  CHECK(mxfp4_code(0.25f) == 0);  // ties to even
  CHECK(mxfp4_code(0.75f) == 2);
  CHECK(mxfp4_code(1.25f) == 2);
  CHECK(mxfp4_code(1.75f) == 4);
  CHECK(mxfp4_code(2.5f) == 4);
  CHECK(mxfp4_code(3.5f) == 6);
  CHECK(mxfp4_code(5.0f) == 6);
  CHECK(mxfp4_code(0.2500001f) == 1);  // a dropped bit is sticky
  CHECK(mxfp4_code(100.0f) == 7);      // saturates at 6
  CHECK(mxfp4_code(-0.0f) == 8);       // the sign bit is kept
  CHECK(mxfp4_code(-0.1f) == 8);
  std::vector<float> g(32, 0.0f);
  CHECK(mxfp4_scale(g.data()) == 0);  // an all-zero group: scale 0, quotients 0
  g[3] = 6.0f;
  CHECK(mxfp4_scale(g.data()) == 127);  // 6 / 6 = 1 = 2^0
  g[3] = 6.5f;
  CHECK(mxfp4_scale(g.data()) == 128);  // rounded up to 2
}

TEST_CASE("lethe mxfp4: the gpt-oss _blocks/_scales are quantize_to_mxfp4's bytes", "[lethe][mxfp4]") {
  const StFile in = open_fixture("lethe/mxfp4/input.safetensors");
  const StFile ex = open_fixture("lethe/mxfp4/mxfp4.safetensors");
  for (const std::string name : {"model.layers.0.mlp.experts.gate_up_proj", "model.layers.0.mlp.experts.down_proj",
                                 "model.layers.0.self_attn.q_proj.weight"}) {
    INFO(name);
    const auto& t = in.tensor(name);
    const uint64_t rows = t.shape[0], cols = t.shape[1];
    const std::vector<float> x = as_f32(in, name);
    std::vector<uint8_t> blocks(rows * cols / 2), scales(rows * cols / 32);
    mxfp4_quantize_rows(x.data(), rows, cols, blocks.data(), scales.data());
    CHECK(differing(scales, bytes_of(ex, name + "_scales")) == 0);
    CHECK(differing(blocks, bytes_of(ex, name + "_blocks")) == 0);
    // forget(remember(...)) with the same scales: amn's reader (F32), encoded again.
    std::vector<float> back(rows * cols);
    quant::dequantize_mxfp4_rows({rows, cols / 32}, blocks.data(), scales.data(), 0, rows, DType::F32,
                                 reinterpret_cast<uint8_t*>(back.data()));
    std::vector<uint8_t> again(blocks.size()), same = scales;
    mxfp4_quantize_rows(back.data(), rows, cols, again.data(), same.data(), true);
    CHECK(differing(again, blocks) == 0);
  }
}
