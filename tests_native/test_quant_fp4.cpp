// MXFP4 and NVFP4 dequantization (kernels/quant/fp4.h) against transformers'
// convert_moe_packed_tensors, ModelOpt's NVFP4QTensor.dequantize and compressed-tensors'
// NVFP4PackedCompressor.decompress: fixtures/quantized/{mxfp4,nvfp4}, under every
// implementation (the scalar reference and each Highway target).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include <catch2/catch.hpp>

#include "formats/safetensors/parse.h"
#include "kernels/cast.h"
#include "kernels/quant/fp4.h"
#include "quant_support.h"
#include "support.h"

using namespace amn;
using namespace amn::quant;
using namespace amn::test::quant_fixtures;

namespace {
}  // namespace

TEST_CASE("mxfp4: gpt-oss blocks and scales match transformers' convert_moe_packed_tensors", "[quant][fp4]") {
  const StFile in = open_fixture("quantized/mxfp4/gpt_oss.safetensors");
  const StFile ex = open_fixture("quantized/mxfp4/gpt_oss.expected.safetensors");
  for (const std::string proj : {"gate_up_proj", "down_proj"}) {
    const std::string base = "model.layers.0.mlp.experts." + proj;
    const auto& bt = in.tensor(base + "_blocks");
    REQUIRE(bt.shape.size() == 4);
    const uint64_t experts = bt.shape[0], out_f = bt.shape[1], groups = bt.shape[2];
    Mxfp4Params p{experts * out_f, groups};
    const auto blocks = in.data(base + "_blocks"), scales = in.data(base + "_scales");
    REQUIRE(validate_mxfp4(p, blocks.size(), scales.size()));
    const uint64_t cols = groups * 32;
    for_each_impl_and_target([&](DType to) {
      INFO(proj << " -> " << dtype_name(to));
      const size_t es = esize(to);
      std::vector<uint8_t> got(p.rows * cols * es);
      for (uint64_t r = 0; r < p.rows; r += 29) {
        const uint64_t e = std::min(p.rows, r + 29);
        dequantize_mxfp4_rows(p, blocks.data() + r * groups * 16, scales.data() + r * groups, r, e, to,
                              got.data() + r * cols * es);
      }
      // transformers returns [experts, in, out]: transpose ours ([experts, out, in]).
      const auto want = ex.data(base + "@" + std::string(to == DType::BF16 ? "bf16" : to == DType::F16 ? "f16" : "f32"));
      REQUIRE(want.size() == got.size());
      size_t diff = 0;
      for (uint64_t x = 0; x < experts; ++x)
        for (uint64_t o = 0; o < out_f; ++o)
          for (uint64_t c = 0; c < cols; ++c)
            diff += std::memcmp(got.data() + ((x * out_f + o) * cols + c) * es,
                                want.data() + ((x * cols + c) * out_f + o) * es, es) != 0;
      CHECK(diff == 0);
    });
  }
}

namespace {
void check_nvfp4(const std::string& variant, Nvfp4Layout layout, const std::string& base, const std::string& packed_name,
                 const std::string& global_name) {
  const StFile in = open_fixture("quantized/nvfp4/" + variant + ".safetensors");
  const StFile ex = open_fixture("quantized/nvfp4/" + variant + ".expected.safetensors");
  const auto& pt = in.tensor(base + "." + packed_name);
  Nvfp4Params p;
  p.layout = layout;
  p.rows = pt.shape.at(0);
  p.cols = pt.shape.at(1) * 2;
  const auto g = in.data(base + "." + global_name);
  REQUIRE(g.size() == 4);
  std::memcpy(&p.global_scale, g.data(), 4);
  const auto packed = in.data(base + "." + packed_name), scales = in.data(base + ".weight_scale");
  REQUIRE(in.tensor(base + ".weight_scale").dtype == DType::F8_E4M3);
  REQUIRE(validate_nvfp4(p, packed.size(), scales.size()));
  // ModelOpt's dequantize computes in F32 (the fixture's dtype) and casts to the requested
  // dtype; compressed-tensors' decompress returns BF16.
  const DType canon = layout == Nvfp4Layout::modelopt ? DType::F32 : DType::BF16;
  REQUIRE(ex.tensor(base + ".weight").dtype == canon);
  for_each_impl_and_target([&](DType to) {
    INFO(variant << " " << base << " -> " << dtype_name(to));
    std::vector<uint8_t> got(p.rows * p.cols * esize(to));
    for (uint64_t r = 0; r < p.rows; r += 10) {
      const uint64_t e = std::min(p.rows, r + 10);
      dequantize_nvfp4_rows(p, packed.data() + r * p.cols / 2, scales.data() + r * p.cols / 16, r, e, to,
                            got.data() + r * p.cols * esize(to));
    }
    CHECK(differing(got, expected_as(ex.data(base + ".weight"), canon, to)) == 0);
  });
}
}  // namespace

TEST_CASE("nvfp4: ModelOpt layout matches NVFP4QTensor.dequantize", "[quant][fp4]") {
  check_nvfp4("modelopt", Nvfp4Layout::modelopt, "model.layers.0.self_attn.q_proj", "weight", "weight_scale_2");
  check_nvfp4("modelopt", Nvfp4Layout::modelopt, "model.layers.0.mlp.down_proj", "weight", "weight_scale_2");
}

TEST_CASE("nvfp4: compressed-tensors layout matches NVFP4PackedCompressor.decompress", "[quant][fp4]") {
  check_nvfp4("compressed_tensors", Nvfp4Layout::compressed_tensors, "model.layers.0.self_attn.q_proj", "weight_packed",
              "weight_global_scale");
  check_nvfp4("compressed_tensors", Nvfp4Layout::compressed_tensors, "model.layers.0.mlp.down_proj", "weight_packed",
              "weight_global_scale");
}

TEST_CASE("fp4: inconsistent shapes are errors", "[quant][fp4]") {
  auto code = [](const Status& s) { return s ? ErrorCode::internal : s.error().code; };
  CHECK(validate_mxfp4({74, 3}, 74 * 3 * 16, 74 * 3));
  CHECK(code(validate_mxfp4({74, 3}, 74 * 3 * 16 - 1, 74 * 3)) == ErrorCode::invalid_argument);
  CHECK(code(validate_mxfp4({74, 3}, 74 * 3 * 16, 74 * 2)) == ErrorCode::invalid_argument);
  CHECK(code(validate_mxfp4({0, 3}, 0, 0)) == ErrorCode::invalid_argument);
  Nvfp4Params p;
  p.rows = 37, p.cols = 144;
  CHECK(validate_nvfp4(p, 37 * 72, 37 * 9));
  CHECK(code(validate_nvfp4(p, 37 * 72, 37 * 8)) == ErrorCode::invalid_argument);
  p.cols = 140;  // not a multiple of 16
  CHECK(code(validate_nvfp4(p, 37 * 70, 37 * 9)) == ErrorCode::invalid_argument);
}
