// FP8 dequantization (kernels/quant/fp8.h) against the producers' own dequantizers:
// fixtures/quantized/fp8 (transformers Fp8Dequantize, compressed-tensors _process_block and
// _dequantize). Every target dtype, computed in pieces of rows, under every implementation
// (the scalar reference and each Highway target; test_quant_simd.cpp: random inputs).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include <catch2/catch.hpp>

#include "formats/safetensors/parse.h"
#include "kernels/cast.h"
#include "kernels/quant/fp8.h"
#include "quant_support.h"
#include "support.h"

using namespace amn;
using namespace amn::quant;
using namespace amn::test::quant_fixtures;

namespace {
// Runs the kernel in pieces of `piece` rows and returns the whole output.
std::vector<uint8_t> run_fp8(const Fp8Params& p, std::span<const uint8_t> w, std::span<const uint8_t> s, DType to,
                             uint64_t piece) {
  REQUIRE(validate_fp8(p, w.size(), s.size()));
  std::vector<uint8_t> out(p.rows * p.cols * esize(to));
  for (uint64_t r = 0; r < p.rows; r += piece) {
    const uint64_t e = std::min(p.rows, r + piece);
    dequantize_fp8_rows(p, w.data() + r * p.cols, s.data(), r, e, to, out.data() + r * p.cols * esize(to));
  }
  return out;
}

void check_fp8(const std::string& variant, const std::string& base, Fp8Params p, const std::string& scale_name) {
  const StFile in = open_fixture("quantized/fp8/" + variant + ".safetensors");
  const StFile ex = open_fixture("quantized/fp8/" + variant + ".expected.safetensors");
  const auto& wt = in.tensor(base + ".weight");
  const auto& st = in.tensor(base + "." + scale_name);
  p.weight = wt.dtype;
  p.rows = wt.shape.at(0);
  p.cols = wt.shape.at(1);
  p.scale = st.dtype;
  const auto& et = ex.tensor(base + ".weight");
  for_each_impl_and_target([&](DType to) {
    INFO(variant << " " << base << " -> " << dtype_name(to));
    const auto got = run_fp8(p, in.data(base + ".weight"), in.data(base + "." + scale_name), to, 77);
    CHECK(differing(got, expected_as(ex.data(base + ".weight"), et.dtype, to)) == 0);
  });
}

}  // namespace

TEST_CASE("fp8: DeepSeek-V3 block scales match transformers / compressed-tensors", "[quant][fp8]") {
  Fp8Params p;
  p.scale_rows = 2, p.scale_cols = 4, p.block_rows = 128, p.block_cols = 128;
  check_fp8("block_e4m3", "model.layers.0.self_attn.q_proj", p, "weight_scale_inv");
  // 300 x 200: partial blocks on both edges
  p.scale_rows = 3, p.scale_cols = 2;
  check_fp8("block_e4m3", "model.layers.0.mlp.down_proj", p, "weight_scale_inv");
}

TEST_CASE("fp8: compressed-tensors per-channel scales, BF16 and F16 arithmetic", "[quant][fp8]") {
  Fp8Params p;
  p.scale_rows = 256, p.scale_cols = 1, p.block_rows = 1, p.block_cols = 512, p.compute = DType::BF16;
  check_fp8("channel_e4m3_ct", "model.layers.0.self_attn.k_proj", p, "weight_scale");
  p.scale_rows = 37, p.block_cols = 45, p.compute = DType::F16;
  check_fp8("channel_e4m3_ct", "model.layers.0.self_attn.o_proj", p, "weight_scale");
}

TEST_CASE("fp8: E5M2 per-tensor scales", "[quant][fp8]") {
  Fp8Params p;
  p.block_rows = 256, p.block_cols = 512;
  check_fp8("tensor_e5m2", "model.layers.0.mlp.gate_proj", p, "weight_scale");
  p.block_rows = 33, p.block_cols = 17;
  check_fp8("tensor_e5m2", "model.layers.0.mlp.up_proj", p, "weight_scale");
}

TEST_CASE("fp8: decoding E4M3 and E5M2 codes", "[quant][fp8]") {
  CHECK(fp8_to_f32(DType::F8_E4M3, 0x7E) == 448.0f);
  CHECK(fp8_to_f32(DType::F8_E4M3, 0x01) == 0.001953125f);
  CHECK(fp8_to_f32(DType::F8_E4M3, 0x38) == 1.0f);
  CHECK(std::signbit(fp8_to_f32(DType::F8_E4M3, 0x80)));
  CHECK(fp8_to_f32(DType::F8_E4M3, 0x7F) != fp8_to_f32(DType::F8_E4M3, 0x7F));
  CHECK(fp8_to_f32(DType::F8_E5M2, 0x7B) == 57344.0f);
  CHECK(fp8_to_f32(DType::F8_E5M2, 0x3C) == 1.0f);  // E5M2 is not read as E4M3
  CHECK(std::isinf(fp8_to_f32(DType::F8_E5M2, 0x7C)));
}

TEST_CASE("fp8: inconsistent parameters are errors", "[quant][fp8]") {
  Fp8Params p;
  p.rows = 300, p.cols = 200, p.scale_rows = 3, p.scale_cols = 2, p.block_rows = 128, p.block_cols = 128;
  CHECK(validate_fp8(p, 60000, 24));
  auto code = [](const Status& s) { return s ? ErrorCode::internal : s.error().code; };
  CHECK(code(validate_fp8(p, 59999, 24)) == ErrorCode::invalid_argument);  // weight length
  CHECK(code(validate_fp8(p, 60000, 20)) == ErrorCode::invalid_argument);  // wrong scale length
  Fp8Params q = p;
  q.scale_rows = 2;  // grid does not cover the rows
  CHECK(code(validate_fp8(q, 60000, 16)) == ErrorCode::invalid_argument);
  q = p;
  q.block_rows = 0;
  CHECK(code(validate_fp8(q, 60000, 24)) == ErrorCode::invalid_argument);
  q = p;
  q.weight = DType::U8;
  CHECK(code(validate_fp8(q, 60000, 24)) == ErrorCode::invalid_argument);
  q = p;
  q.compute = DType::F16;  // F16 arithmetic with F32 scales is no producer's
  CHECK(code(validate_fp8(q, 60000, 24)) == ErrorCode::invalid_argument);
  const auto e = validate_fp8(p, 60000, 20);
  CHECK(e.error().message.find("scale has 20 bytes") != std::string::npos);
}
