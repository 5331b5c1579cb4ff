// compressed-tensors integer kernels against compressed-tensors' own decompress_weight
// output (fixtures/quantized/compressed_tensors, made by make_fixtures.py there):
// 0 differing bytes for BF16 (what decompress_weight returns for BF16 scales) and for
// F16 / F32 (the exact F32 product rounded once: the "@f16" / "@f32" tensors of
// make_round_once.py), under every implementation (the reference and each Highway
// target); hostile parameters rejected.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cast.h"
#include "kernels/quant/packed.h"
#include "quant_support.h"
#include "support.h"

using namespace amn::test::quant_fixtures;

namespace {

using amn::DType;

struct Layer {
  amn::quant::CtIntParams params;
  amn::quant::CtIntTensors tensors;
};

// Parameters as scheme detection will fill them: num_bits and the format from
// config.json, everything else from the tensors present and their shapes.
Layer layer(const StFile& f, const std::string& base, uint32_t bits, bool packed) {
  Layer l;
  auto& p = l.params;
  p.bits = bits;
  p.packed = packed;
  const auto& scale = f.tensor(base + ".weight_scale");
  if (packed) {
    const auto shape = f.data(base + ".weight_shape");
    REQUIRE(f.tensor(base + ".weight_shape").dtype == DType::I64);
    std::memcpy(&p.out_features, shape.data(), 8);
    std::memcpy(&p.in_features, shape.data() + 8, 8);
    l.tensors.weight = f.data(base + ".weight_packed");
  } else {
    const auto& w = f.tensor(base + ".weight");
    REQUIRE(w.dtype == DType::I8);
    p.out_features = w.shape[0];
    p.in_features = w.shape[1];
    l.tensors.weight = f.data(base + ".weight");
  }
  p.scale_rows = scale.shape[0];
  p.scale_cols = scale.shape.size() > 1 ? scale.shape[1] : 1;
  p.scale_dtype = scale.dtype;
  l.tensors.scale = f.data(base + ".weight_scale");
  if (f.model.find(base + ".weight_zero_point")) {
    p.has_zero_point = true;
    l.tensors.zero_point = f.data(base + ".weight_zero_point");
  }
  if (f.model.find(base + ".weight_g_idx")) {
    p.has_g_idx = true;
    l.tensors.g_idx = f.data(base + ".weight_g_idx");
  }
  return l;
}

struct Case {
  const char* dir;
  const char* base;
  uint32_t bits;
  bool packed;
  bool zero_point, g_idx;  // what the fixture must hold, so each path is exercised
};

const Case kCases[] = {
    {"w4a16_g128_sym", "model.layers.0.self_attn.q_proj", 4, true, false, false},
    {"w4a16_g128_asym_actorder", "model.layers.0.self_attn.q_proj", 4, true, true, true},
    {"w8a16_channel_sym", "model.layers.0.self_attn.q_proj", 8, true, false, false},
    {"mixed_odd", "model.layers.0.mlp.down_proj", 4, true, true, false},
    {"mixed_odd", "model.layers.0.mlp.up_proj", 8, true, true, false},
    {"int8_channel_sym_naive", "model.layers.0.self_attn.q_proj", 8, false, false, false},
    {"int8_channel_asym", "model.layers.0.self_attn.q_proj", 8, false, true, false},
};

// Runs the enclosing test case once per implementation this binary can run (GENERATE
// below), the reference ("scalar") included; restores the one in use afterwards.
struct EachImpl {
  std::string saved{amn::active_impl_name()};
  explicit EachImpl(const std::string& impl) { REQUIRE(amn::force_impl(impl)); }
  ~EachImpl() { amn::force_impl(saved); }
};
std::vector<std::string> impl_names() {
  const auto names = amn::available_impls();
  return {names.begin(), names.end()};
}

}  // namespace

TEST_CASE("compressed-tensors dequantization equals its decompress_weight", "[quant][ct]") {
  const std::string impl = GENERATE(Catch::Generators::from_range(impl_names()));
  const EachImpl scope(impl);
  INFO("implementation " << impl);
  for (const auto& c : kCases) {
    INFO(c.dir << " " << c.base);
    const auto model = open_fixture(std::string("quantized/compressed_tensors/") + c.dir + "/model.safetensors");
    const auto expected = open_fixture(std::string("quantized/compressed_tensors/") + c.dir + "/expected.safetensors");
    const auto l = layer(model, c.base, c.bits, c.packed);
    CHECK(l.params.has_zero_point == c.zero_point);
    CHECK(l.params.has_g_idx == c.g_idx);
    const auto& exp = expected.tensor(std::string(c.base) + ".weight");
    REQUIRE(exp.dtype == DType::BF16);
    REQUIRE(exp.shape == std::vector<uint64_t>{l.params.out_features, l.params.in_features});
    for (DType out : {DType::BF16, DType::F16, DType::F32}) {
      INFO(amn::dtype_name(out));
      const auto want = expected_for(expected, std::string(c.base) + ".weight", DType::BF16, out);
      std::vector<uint8_t> got(want.size(), 0xAB);
      REQUIRE(amn::quant::dequantize_ct_int_rows(l.params, l.tensors, 0, l.params.out_features, out, got).ok());
      CHECK(differing(got, want) == 0);
      std::vector<uint8_t> pieces(want.size(), 0xCD);
      const size_t row_bytes = l.params.in_features * amn::dtype_info(out).block_bytes;
      for (uint64_t r = 0; r < l.params.out_features; r += 9) {
        const uint64_t e = std::min<uint64_t>(r + 9, l.params.out_features);
        REQUIRE(amn::quant::dequantize_ct_int_rows(l.params, l.tensors, r, e, out,
                                                   std::span<uint8_t>(pieces).subspan(r * row_bytes)).ok());
      }
      CHECK(differing(pieces, want) == 0);
    }
  }
}

TEST_CASE("compressed-tensors rejects inconsistent parameters and tensors", "[quant][ct]") {
  const auto model = open_fixture("quantized/compressed_tensors/w4a16_g128_asym_actorder/model.safetensors");
  const auto l = layer(model, "model.layers.0.self_attn.q_proj", 4, true);
  std::vector<uint8_t> out(l.params.out_features * l.params.in_features * 4);
  auto run = [&](const amn::quant::CtIntParams& p, const amn::quant::CtIntTensors& t) {
    return amn::quant::dequantize_ct_int_rows(p, t, 0, p.out_features, DType::BF16, out);
  };
  REQUIRE(run(l.params, l.tensors).ok());
  auto p = l.params;
  p.bits = 9;
  CHECK(run(p, l.tensors).error().code == amn::ErrorCode::parse);
  p = l.params;
  p.bits = 8;  // the packed weight is half the size 8 bits need
  const auto e = run(p, l.tensors);
  CHECK(e.error().code == amn::ErrorCode::parse);
  CHECK(e.error().message.find("weight_packed") != std::string::npos);
  p = l.params;
  p.scale_cols = 3;  // does not divide 512
  CHECK(run(p, l.tensors).error().code == amn::ErrorCode::parse);
  p = l.params;
  p.scale_rows = 2;
  CHECK(run(p, l.tensors).error().code == amn::ErrorCode::parse);
  auto t = l.tensors;
  t.zero_point = t.zero_point.first(4);
  CHECK(run(l.params, t).error().code == amn::ErrorCode::parse);
  t = l.tensors;
  t.scale = t.scale.first(t.scale.size() - 2);
  CHECK(run(l.params, t).error().code == amn::ErrorCode::parse);
  std::vector<uint8_t> g(l.tensors.g_idx.begin(), l.tensors.g_idx.end());
  const int32_t outside = 4;
  std::memcpy(&g[4 * 11], &outside, 4);
  t = l.tensors;
  t.g_idx = g;
  const auto e2 = run(l.params, t);
  CHECK(e2.error().code == amn::ErrorCode::parse);
  CHECK(e2.error().message.find("weight_g_idx[11]") != std::string::npos);
  t.g_idx = t.g_idx.first(8);
  CHECK(run(l.params, t).error().code == amn::ErrorCode::parse);
  p = l.params;
  p.scale_dtype = DType::F8_E4M3;
  CHECK(run(p, l.tensors).error().code == amn::ErrorCode::parse);
}

TEST_CASE("compressed-tensors rejected-file fixtures are rejected", "[quant][ct]") {
  const std::string base = "model.layers.0.self_attn.q_proj";
  for (const char* name : {"weight_shape_mismatch", "g_idx_out_of_range", "zero_point_wrong_shape",
                           "scale_groups_not_dividing"}) {
    INFO(name);
    const auto model = open_fixture(std::string("quantized/compressed_tensors/rejected/") + name + "/model.safetensors");
    const auto l = layer(model, base, 4, true);
    std::vector<uint8_t> out(l.params.out_features * l.params.in_features * 2);
    const auto r = amn::quant::dequantize_ct_int_rows(l.params, l.tensors, 0, l.params.out_features, DType::BF16, out);
    REQUIRE(!r.ok());
    CHECK(r.error().code == amn::ErrorCode::parse);
  }
  const auto missing = open_fixture("quantized/compressed_tensors/rejected/missing_weight_scale/model.safetensors");
  CHECK(missing.model.find(base + ".weight_scale") == nullptr);
}

TEST_CASE("compressed-tensors kernel runs on row slices of its tensors", "[quant][ct]") {
  // packed.h: rows [b, e) from slices, b a multiple of 32 / bits when zero points are packed
  const std::string base = "model.layers.0.self_attn.q_proj";
  const auto model = open_fixture("quantized/compressed_tensors/w4a16_g128_asym_actorder/model.safetensors");
  const auto l = layer(model, base, 4, true);
  const auto& p = l.params;
  std::vector<uint8_t> full(p.out_features * p.in_features * 2);
  REQUIRE(amn::quant::dequantize_ct_int_rows(p, l.tensors, 0, p.out_features, DType::BF16, full).ok());
  const uint64_t b = 16, e = 43, pf = 8;
  auto q = p;
  q.out_features = e - b;
  q.scale_rows = e - b;
  auto t = l.tensors;
  const uint64_t words = p.in_features / pf;
  t.weight = t.weight.subspan(b * words * 4, (e - b) * words * 4);
  t.scale = t.scale.subspan(b * p.scale_cols * 2, (e - b) * p.scale_cols * 2);
  t.zero_point = t.zero_point.subspan(b / pf * p.scale_cols * 4, ((e - b + pf - 1) / pf) * p.scale_cols * 4);
  std::vector<uint8_t> part((e - b) * p.in_features * 2);
  REQUIRE(amn::quant::dequantize_ct_int_rows(q, t, 0, e - b, DType::BF16, part).ok());
  CHECK(std::equal(part.begin(), part.end(), full.begin() + b * p.in_features * 2));
}
